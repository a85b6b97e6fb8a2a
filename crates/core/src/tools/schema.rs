//! Tool input schemas.

#[cfg(test)]
mod tests;
