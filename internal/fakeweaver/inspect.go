package fakeweaver

import "github.com/metaclaw-go/metaclaw/internal/faketinker/toy"

// CheckpointState returns the weights and optimizer state saved under a
// weaver:// checkpoint path, for tests that compare two runs' models
// exactly; ok is false for an unknown path or one without optimizer state.
func (s *Server) CheckpointState(path string) (st *toy.State, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.ckpts[path]
	if c == nil || c.state == nil || c.kind != "weight_and_optimizer" {
		return nil, false
	}
	return c.state, true
}
