// Package backend is the Go face of a LoRA training service: Tinker, MinT,
// Weaver, or a Trainer sub-plugin all sit behind the interfaces here, so the
// serving path, the samples table and the training loop never know which one
// they talk to.
//
// The shapes follow Tinker's JSON protocol (the common denominator of the
// three services; see docs/rl.md): a Backend is one connected session; it
// creates Trainers (one LoRA each) and Samplers (a frozen set of weights that
// answers token-id prompts with token ids and their log-probabilities).
//
// Hot swap: a training step ends with Trainer.SaveForSampler, which returns a
// NEW Sampler for the new weights. The serving path keeps the current one in a
// Current; each request loads it once and keeps using what it loaded, so
// turns in flight finish on the old sampler while new turns get the new one.
package backend
