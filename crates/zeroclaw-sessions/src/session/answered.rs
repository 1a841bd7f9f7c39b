//! "The answer is queued": how a queued job's caller tells the session's worker that its
//! answer is on its connection, so that the worker starts the next job only then (SPEC
//! §17.2: a prompt's answer is written before the first event of the next queued turn —
//! `turn_complete`, then the answer, then the next `user_message`).
//!
//! The caller keeps an [`AnswerQueued`] and calls [`AnswerQueued::after_answer`] once it
//! has the job's result: the signal goes when the connection loop has queued the answer
//! (a hook given to the request's [`OnAnswer`]), or when the caller is gone. The worker waits on the
//! job's [`AnswerWait`] at most [`ANSWER_WAIT`]: a peer too slow to take its answer
//! delays the session's next job by that much, never more.

use std::time::Duration;

use tokio::sync::oneshot;

use super::link::OnAnswer;

/// The longest the worker waits for a job's answer to be queued before the next job.
pub const ANSWER_WAIT: Duration = Duration::from_secs(5);

/// The caller's end: signalled once its answer is queued (or dropped, when the caller is
/// gone).
pub struct AnswerQueued(oneshot::Sender<()>);

/// The worker's end, carried by the job.
pub struct AnswerWait(oneshot::Receiver<()>);

/// A new pair for one job.
pub fn pair() -> (AnswerQueued, AnswerWait) {
    let (tx, rx) = oneshot::channel();
    (AnswerQueued(tx), AnswerWait(rx))
}

impl AnswerQueued {
    /// Signals once the answer of the request being handled is queued, as `answer` tells.
    pub fn after_answer(self, answer: &dyn OnAnswer) {
        let AnswerQueued(queued) = self;
        answer.after_answer(Box::new(move || {
            // The worker may have stopped waiting: nothing to tell it then.
            let _ = queued.send(());
        }));
    }
}

impl AnswerWait {
    /// Returns when the caller's answer is queued, the caller is gone, or after
    /// [`ANSWER_WAIT`].
    pub async fn wait(self) {
        if tokio::time::timeout(ANSWER_WAIT, self.0).await.is_err() {
            tracing::debug!("a job's answer was not queued in time; the next job starts");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::link::tests::Answered;
    use std::sync::{Arc, Mutex};

    #[tokio::test]
    async fn the_wait_ends_when_the_answer_is_queued_not_before() {
        let (queued, wait) = pair();
        let log = Arc::new(Mutex::new(Vec::new()));
        let l = Arc::clone(&log);
        let worker = tokio::spawn(async move {
            wait.wait().await;
            l.lock().unwrap().push("next job");
        });
        let answered = Answered::default();
        queued.after_answer(&answered);
        // A positive control first: the worker is still waiting once everything before
        // the answer ran (it would have logged "next job" here otherwise).
        tokio::task::yield_now().await;
        log.lock().unwrap().push("answer");
        answered.answer_queued();
        worker.await.unwrap();
        assert_eq!(*log.lock().unwrap(), vec!["answer", "next job"]);
    }

    #[tokio::test(start_paused = true)]
    async fn a_caller_that_never_answers_holds_the_worker_at_most_the_bound() {
        let (queued, wait) = pair();
        let started = tokio::time::Instant::now();
        wait.wait().await;
        assert_eq!(started.elapsed(), ANSWER_WAIT);
        drop(queued);
        // A caller that is gone releases it at once.
        let (queued, wait) = pair();
        drop(queued);
        let started = tokio::time::Instant::now();
        wait.wait().await;
        assert_eq!(started.elapsed(), Duration::ZERO);
    }
}
