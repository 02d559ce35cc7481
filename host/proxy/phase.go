package proxy

import (
	"context"
	"runtime/trace"
)

// phase marks the request path's steps as runtime/trace regions, so a
// trace (proxybench -trace) shows where each answer's time went: parsing,
// the context call, the upstream, the answer's parse, its recording and
// its write. Without a trace running a region costs one atomic load.
type phase struct {
	ctx context.Context
	r   *trace.Region
}

// to ends the current step and starts the named one.
func (p *phase) to(name string) {
	p.end()
	p.r = trace.StartRegion(p.ctx, name)
}

// end ends the current step (once).
func (p *phase) end() {
	if p.r != nil {
		p.r.End()
		p.r = nil
	}
}
