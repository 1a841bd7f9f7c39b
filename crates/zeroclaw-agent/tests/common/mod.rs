//! Shared helpers for the agent's integration tests: a recording host and
//! provider/spec builders.

#![allow(dead_code)]

use std::collections::VecDeque;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use zeroclaw_agent::{
    AgentSpec, ApprovalAsk, ApprovalDecision, AskUser, Autonomy, OpenAiConfig, OpenAiProvider,
    Provider, TurnEvent, TurnHost,
};
use zeroclaw_testkit::FakeOpenAi;

#[derive(Debug, Clone, PartialEq)]
pub enum Rec {
    Event(TurnEvent<'static>),
    Approval(ApprovalAsk),
    Ask(AskUser),
}

pub struct TestHost {
    pub log: Mutex<Vec<Rec>>,
    pub decisions: Mutex<VecDeque<ApprovalDecision>>,
    pub answers: Mutex<VecDeque<Option<String>>>,
    pub can_ask: bool,
    /// When set, `approve` waits this long before answering.
    pub approve_delay: Duration,
    /// `result_text_max` (`None`: the trait's default, no limit).
    pub result_max: Option<usize>,
}

impl TestHost {
    pub fn new() -> Self {
        TestHost {
            log: Mutex::new(Vec::new()),
            decisions: Mutex::new(VecDeque::new()),
            answers: Mutex::new(VecDeque::new()),
            can_ask: false,
            approve_delay: Duration::ZERO,
            result_max: None,
        }
    }

    pub fn with_decisions(decisions: Vec<ApprovalDecision>) -> Self {
        let h = TestHost::new();
        *h.decisions.lock().unwrap() = decisions.into();
        h
    }

    pub fn log(&self) -> Vec<Rec> {
        self.log.lock().unwrap().clone()
    }

    /// The log without chunks, usage and context events: the tool protocol.
    pub fn tool_log(&self) -> Vec<Rec> {
        self.log()
            .into_iter()
            .filter(|r| {
                !matches!(
                    r,
                    Rec::Event(
                        TurnEvent::MessageChunk { .. }
                            | TurnEvent::ThoughtChunk { .. }
                            | TurnEvent::Usage { .. }
                            | TurnEvent::ContextAppended { .. }
                    )
                )
            })
            .collect()
    }

    pub fn text(&self) -> String {
        self.chunks().concat()
    }

    pub fn chunks(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter_map(|r| match r {
                Rec::Event(TurnEvent::MessageChunk { text, .. }) => Some(text),
                _ => None,
            })
            .collect()
    }

    pub fn thoughts(&self) -> String {
        self.log()
            .into_iter()
            .filter_map(|r| match r {
                Rec::Event(TurnEvent::ThoughtChunk { text }) => Some(text),
                _ => None,
            })
            .collect()
    }

    pub fn tool_results(&self) -> Vec<String> {
        self.log()
            .into_iter()
            .filter_map(|r| match r {
                Rec::Event(TurnEvent::ToolResult { raw_output, .. }) => Some(raw_output),
                _ => None,
            })
            .collect()
    }
}

#[async_trait]
impl TurnHost for TestHost {
    async fn emit(&self, event: TurnEvent<'_>) {
        self.log
            .lock()
            .unwrap()
            .push(Rec::Event(event.into_owned()));
    }

    async fn approve(&self, ask: ApprovalAsk) -> ApprovalDecision {
        self.log.lock().unwrap().push(Rec::Approval(ask));
        if !self.approve_delay.is_zero() {
            tokio::time::sleep(self.approve_delay).await;
        }
        self.decisions
            .lock()
            .unwrap()
            .pop_front()
            .unwrap_or(ApprovalDecision::AllowOnce)
    }

    async fn ask_user(&self, ask: AskUser) -> Option<String> {
        self.log.lock().unwrap().push(Rec::Ask(ask));
        self.answers.lock().unwrap().pop_front().flatten()
    }

    fn can_ask_user(&self) -> bool {
        self.can_ask
    }

    fn result_text_max(&self) -> usize {
        self.result_max.unwrap_or(usize::MAX)
    }
}

pub fn openai_config(fake: &FakeOpenAi) -> OpenAiConfig {
    let mut c = OpenAiConfig::new(fake.base_url(), "fake-model");
    c.api_key = Some("sk-test".into());
    c
}

pub fn openai(fake: &FakeOpenAi) -> Arc<dyn Provider> {
    Arc::new(OpenAiProvider::new(openai_config(fake)).unwrap())
}

pub fn spec(provider: Arc<dyn Provider>, workspace: &Path, autonomy: Autonomy) -> AgentSpec {
    let mut s = AgentSpec::new(provider, workspace.to_path_buf());
    s.system_prompt = "You are a test.".into();
    s.autonomy = autonomy;
    s.limits.bash_timeout = Duration::from_secs(10);
    s
}
