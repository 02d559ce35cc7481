package faketinker

import (
	"net/http"
	"time"
)

type session struct {
	id         string
	sdkVersion string
	lastBeat   time.Time
	expired    bool
	models     map[int]*work  // model_seq_id → its create_model work
	samplers   map[int]string // sampling_session_seq_id → sampler id
	createdBy  map[int]string // sampling_session_seq_id → what it was made from
	modelIDs   map[int]string // model_seq_id → model id
	heartbeats int
}

func (s *Server) createSession(r *http.Request, body []byte) (any, *httpError) {
	var req createSessionReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "create_session"); herr != nil {
		return nil, herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.newID("sess-")
	s.sessions[id] = &session{id: id, sdkVersion: req.SDKVersion, lastBeat: s.opts.Now(),
		models: map[int]*work{}, samplers: map[int]string{}, createdBy: map[int]string{}, modelIDs: map[int]string{}}
	return map[string]any{"session_id": id, "info_message": nil, "warning_message": nil, "error_message": nil}, nil
}

// liveSession returns the session or a 404; called with s.mu held.
func (s *Server) liveSession(id string) (*session, *httpError) {
	ss := s.sessions[id]
	if ss == nil {
		return nil, errf(http.StatusNotFound, "session %q not found", id)
	}
	if ss.expired {
		return nil, errf(http.StatusNotFound, "session %q expired (no heartbeat for %s)", id, s.opts.SessionTTL)
	}
	return ss, nil
}

func (s *Server) heartbeat(r *http.Request, body []byte) (any, *httpError) {
	var req heartbeatReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	if herr := checkType(req.Type, "session_heartbeat"); herr != nil {
		return nil, herr
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	ss, herr := s.liveSession(req.SessionID)
	if herr != nil {
		return nil, herr
	}
	ss.lastBeat = s.opts.Now()
	ss.heartbeats++
	return map[string]string{"type": "session_heartbeat"}, nil
}

// Heartbeats is how many heartbeats a session has received.
func (s *Server) Heartbeats(sessionID string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ss := s.sessions[sessionID]; ss != nil {
		return ss.heartbeats
	}
	return 0
}

// Sessions lists the session ids, in no order.
func (s *Server) Sessions() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var ids []string
	for id := range s.sessions {
		ids = append(ids, id)
	}
	return ids
}

func (s *Server) expireSessions() {
	if s.opts.SessionTTL <= 0 {
		return
	}
	now := s.opts.Now()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, ss := range s.sessions {
		if !ss.expired && now.Sub(ss.lastBeat) > s.opts.SessionTTL {
			ss.expired = true
		}
	}
}

func (s *Server) clientConfig(r *http.Request, body []byte) (any, *httpError) {
	var req clientConfigReq
	if herr := decodeStrict(body, &req); herr != nil {
		return nil, herr
	}
	return map[string]any{
		"pjwt_auth_enabled":                        false,
		"proto_write_fwdbwd":                       false,
		"proto_compress_fwdbwd":                    false,
		"parallel_fwdbwd_chunks":                   false,
		"fwdbwd_max_chunk_len":                     s.opts.FwdBwdMaxChunkLen,
		"fwdbwd_max_chunk_bytes_count":             s.opts.FwdBwdMaxChunkBytes,
		"sample_max_concurrent_requests":           64,
		"billing_exception_max_pause_duration_sec": 3600,
	}, nil
}
