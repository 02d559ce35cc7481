// Package tinker is the client of Tinker's JSON protocol (SDK 0.6–0.24
// generation), which also serves MinT (Tinker's 0.6.0 protocol run by
// MindLab) with Flavor MinT. It implements backend.Backend: a session with a
// heartbeat every 10 s, futures fetched through a long-polled
// retrieve_future (408 → poll again, 410 → submit again, 429 → back off,
// {"error","category"} → fail), per-model seq ids, X-Idempotency-Key on
// every POST kept across retries, retries with jittered back-off, and
// forward_backward cut into chunks by the server's fwdbwd_max_chunk_len and
// byte limit. The protocol and what was verified against the fake are in
// docs/rl.md.
package tinker
