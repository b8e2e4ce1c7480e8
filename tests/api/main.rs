//! API tests: one binary, the real application on port 0 per test.

mod admin;
mod approved;
mod beacon;
mod beacon_follow;
mod callers;
mod callers_config;
mod callers_mtls;
mod doors;
mod fleet;
mod grpc;
mod helpers;
mod hostile;
mod kms;
mod lifecycle;
mod pollen;
mod random;
mod randomorg;
mod receipts;
mod reload;
mod round_draws;
mod sequence;
mod tickets;
mod traces;
mod values;
mod vault;
