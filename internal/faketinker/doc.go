// Package faketinker is a faithful fake of Tinker's JSON protocol (and of
// MinT, Tinker's 0.6.0-era protocol served by MindLab), written from the
// protocol notes, not from our client: sessions and heartbeats, client
// config, futures with a long-polled retrieve_future and injectable failures
// (try_again, 408, 410, 429, 5xx, failed operations), per-model FIFO by
// seq_id, X-Idempotency-Key dedupe, strict request decoding, checkpoints
// with tinker:// paths, 409 and 404 where documented, and a toy model (package
// toy) whose log-probs move with the gradient, so tests can assert learning.
//
// Use New with httptest, or run tools/faketinker for manual use. The
// behaviour is described in docs/rl.md ("Backends").
package faketinker
