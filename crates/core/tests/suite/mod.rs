mod cancel;
mod compaction;
mod dead_turn;
mod dispatch;
mod permissions;
mod rig;
mod sandbox;
