mod common;
mod durability;
mod protocol;
mod sessions;
mod settings;
mod turns;
