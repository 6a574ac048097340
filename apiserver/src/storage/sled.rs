//! Durable storage on sled (being written).
