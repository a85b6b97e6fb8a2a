mod cli;
mod common;
mod durability;
mod permissions;
mod protocol;
mod sessions;
mod settings;
mod turns;
