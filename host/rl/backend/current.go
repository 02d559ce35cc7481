package backend

import (
	"sync/atomic"
	"time"
)

// Version is one sampler as served: the sampler and the training step whose
// weights it holds (0 = the weights training started from).
type Version struct {
	Sampler Sampler
	Step    int
	Since   time.Time
}

// Current holds the sampler that new turns use. Swap replaces it in one
// atomic store; a request calls Load once and uses what it got until it ends,
// so turns in flight finish on the old sampler and serving never waits for a
// swap. The zero value holds nothing.
type Current struct {
	v atomic.Pointer[Version]
}

// Load returns the current version, or nil before the first Swap.
func (c *Current) Load() *Version { return c.v.Load() }

// Swap installs s as the sampler of step and returns the previous version
// (nil if none).
func (c *Current) Swap(s Sampler, step int) *Version {
	return c.v.Swap(&Version{Sampler: s, Step: step, Since: time.Now()})
}
