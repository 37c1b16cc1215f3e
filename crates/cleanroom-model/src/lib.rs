//! Everything between an agent and a model: the chat-completions client,
//! the forwarder that agents inside environments talk to, usage accounting
//! and budgets, ATIF trajectories, and the stop reasons and gates they
//! record.

pub mod atif;
pub mod budget;
pub mod client;
pub mod config;
pub mod forwarder;
mod gate;
pub mod gateway;
pub mod http;
pub mod server;
mod stop_reason;
pub mod translate;
pub mod usage;

pub use budget::{Budget, Exhausted, Meter, Totals};
pub use client::{ChatClient, Completion, ModelError};
pub use config::{ExternalAgent, ModelConfig, Prices};
pub use gate::{AppliedGate, GateDecision, GateMechanism, GateMode, GateVerdict};
pub use gateway::{Dialect, Exchange, Gateway, GatewayError};
pub use stop_reason::StopReason;
pub use usage::Usage;
