//! MCP tool servers of one session (SPEC §16), spoken to with the official Rust SDK
//! (`rmcp`, client side, over a child process's stdio).
//!
//! [`McpSet::start`] returns at once: each server is spawned, initialised and asked for its
//! tools by its own background task ([`server`]), within the ready budget (30 s). Only the
//! tools of servers that are ready are offered, named `SERVER__TOOL`; a server that fails to
//! start or dies later is `failed` with an error, and its tools disappear from the next
//! provider call. Every server runs in its own process group, and [`McpSet::shutdown`]
//! (also run on drop) kills each whole group at once, synchronously.

mod server;
mod types;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

pub use server::MAX_RESULT_BYTES;
use server::Slot;
pub use types::{
    CALL_TIMEOUT, McpServerConfig, McpServerStatus, McpTool, READY_TIMEOUT, SEPARATOR,
};

/// The MCP servers of one session.
pub struct McpSet {
    slots: Vec<Arc<Slot>>,
}

impl McpSet {
    /// Starts every server in the background (needs a tokio runtime); returns at once.
    pub fn start(configs: Vec<McpServerConfig>, ready_timeout: Duration) -> Arc<McpSet> {
        let slots = configs
            .into_iter()
            .map(|c| Slot::spawn(c, ready_timeout))
            .collect();
        Arc::new(McpSet { slots })
    }

    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    pub fn status(&self) -> Vec<McpServerStatus> {
        self.slots.iter().map(|s| s.status()).collect()
    }

    /// The tools of every ready server, in server order.
    pub fn tools(&self) -> Vec<McpTool> {
        self.slots.iter().flat_map(|s| s.tools()).collect()
    }

    /// The slot a `SERVER__TOOL` name belongs to (the longest server name that fits).
    fn slot_of(&self, qualified: &str) -> Option<&Arc<Slot>> {
        self.slots
            .iter()
            .filter(|s| {
                qualified
                    .strip_prefix(s.name.as_str())
                    .is_some_and(|rest| rest.starts_with(SEPARATOR))
            })
            .max_by_key(|s| s.name.len())
    }

    /// Whether `qualified` names a tool of one of these servers (ready or not).
    pub fn owns(&self, qualified: &str) -> bool {
        self.slot_of(qualified).is_some()
    }

    /// The tool `qualified` names, if its server is ready and offers it.
    pub fn tool(&self, qualified: &str) -> Option<McpTool> {
        self.slot_of(qualified)?
            .tools()
            .into_iter()
            .find(|t| t.schema.name == qualified)
    }

    /// Calls a tool. `Err` carries the text given to the model when the call could not be
    /// made (server not ready, dead, timed out, tool unknown).
    pub async fn call(&self, qualified: &str, args: Value) -> Result<String, String> {
        let Some(slot) = self.slot_of(qualified) else {
            return Err(format!("Error: no MCP server offers `{qualified}`."));
        };
        slot.call(qualified, args, CALL_TIMEOUT).await
    }

    /// Kills every server's process group now; the set offers no tools afterwards.
    pub fn shutdown(&self) {
        for s in &self.slots {
            s.stop();
        }
    }
}

impl Drop for McpSet {
    fn drop(&mut self) {
        self.shutdown();
    }
}

impl std::fmt::Debug for McpSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list()
            .entries(self.slots.iter().map(|s| &s.name))
            .finish()
    }
}
