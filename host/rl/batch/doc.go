// Package batch turns scored samples into training datums: advantages (GRPO
// over groups of samples that share a prompt, batch-normalised otherwise, or
// raw rewards) and the datum layout every backend trains on. Pure functions:
// no I/O, no clocks.
package batch
