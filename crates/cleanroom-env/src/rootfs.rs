//! Host-side access to an environment's file system (being written).
#[derive(Debug)]
pub struct RootFs;
