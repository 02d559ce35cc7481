package faketinker

import "github.com/metaclaw-go/metaclaw/internal/faketinker/toy"

// CheckpointState returns the weights and optimizer state saved under a
// training checkpoint path (tinker://<model>/weights/<name>), for tests
// that compare two runs' models exactly. ok is false for an unknown path or
// a sampler checkpoint.
func (s *Server) CheckpointState(path string) (st *toy.State, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.paths[path]
	if c == nil || c.state == nil {
		return nil, false
	}
	return c.state, true
}
