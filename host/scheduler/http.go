package scheduler

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/route"
)

// TouchOnRequests calls s.Touch for every LLM request of the user (POST
// …/chat/completions or …/messages) before passing it on, so a returning
// user closes the window at once. Requests marked `X-Turn-Type: side`
// (heartbeats, cron) are the agent's own and do not count. Touch never
// blocks, so the request is not delayed.
func TouchOnRequests(s *Scheduler, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && (strings.HasSuffix(r.URL.Path, "/chat/completions") || strings.HasSuffix(r.URL.Path, "/messages")) &&
			!strings.EqualFold(r.Header.Get("X-Turn-Type"), "side") {
			s.Touch()
		}
		next.ServeHTTP(w, r)
	})
}

// Reloader is implemented by sources that hold credentials or a cache the
// user can change from the CLI (calendar login/logout).
type Reloader interface {
	Reload()
}

// PauseRequest is the body of POST /v1/scheduler/pause.
type PauseRequest struct {
	ForSeconds float64   `json:"for_seconds,omitempty"` // 0 with no until: until resumed
	Until      time.Time `json:"until,omitzero"`
}

// NextWindowAnswer is the body of GET /v1/scheduler/next-window.
type NextWindowAnswer struct {
	Now        string        `json:"now"`
	Window     *WindowStatus `json:"window,omitempty"`
	NextWindow *Span         `json:"next_window,omitempty"`
	Paused     bool          `json:"paused"`
}

// Routes is the scheduler's API behind the proxy's auth (the CLI uses it
// while a host runs).
func (s *Scheduler) Routes() []route.Route {
	return []route.Route{
		{Pattern: "GET /v1/scheduler", Handler: func(w http.ResponseWriter, r *http.Request) {
			n, _ := strconv.Atoi(r.URL.Query().Get("transitions"))
			if n <= 0 || n > 500 {
				n = 20
			}
			writeJSON(w, http.StatusOK, s.Snapshot(r.Context(), n))
		}},
		{Pattern: "GET /v1/scheduler/next-window", Handler: func(w http.ResponseWriter, r *http.Request) {
			st := s.Snapshot(r.Context(), 1)
			writeJSON(w, http.StatusOK, NextWindowAnswer{Now: st.Now, Window: st.Window, NextWindow: st.NextWindow, Paused: st.Paused})
		}},
		{Pattern: "POST /v1/scheduler/pause", Handler: func(w http.ResponseWriter, r *http.Request) {
			var req PauseRequest
			body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
			if len(strings.TrimSpace(string(body))) > 0 {
				if err := json.Unmarshal(body, &req); err != nil {
					writeError(w, http.StatusBadRequest, fmt.Errorf("body must be JSON like {\"for_seconds\": 3600}: %w", err))
					return
				}
			}
			until, err := req.until(s.o.Clock.Now())
			if err != nil {
				writeError(w, http.StatusBadRequest, err)
				return
			}
			if err := s.Pause(r.Context(), until); err != nil {
				writeError(w, http.StatusInternalServerError, err)
				return
			}
			writeJSON(w, http.StatusOK, s.Snapshot(r.Context(), 5))
		}},
		{Pattern: "POST /v1/scheduler/resume", Handler: func(w http.ResponseWriter, r *http.Request) {
			if err := s.Resume(r.Context()); err != nil {
				writeError(w, http.StatusInternalServerError, err)
				return
			}
			writeJSON(w, http.StatusOK, s.Snapshot(r.Context(), 5))
		}},
		{Pattern: "POST /v1/scheduler/calendar/reload", Handler: func(w http.ResponseWriter, r *http.Request) {
			n := 0
			for _, src := range s.o.Sources {
				if rl, ok := src.(Reloader); ok {
					rl.Reload()
					n++
				}
			}
			writeJSON(w, http.StatusOK, map[string]any{"reloaded": n})
		}},
	}
}

func (p PauseRequest) until(now time.Time) (time.Time, error) {
	switch {
	case p.ForSeconds < 0:
		return time.Time{}, errors.New("for_seconds must be positive (or omitted to pause until resumed)")
	case p.ForSeconds > 0 && !p.Until.IsZero():
		return time.Time{}, errors.New("give for_seconds or until, not both")
	case p.ForSeconds > 0:
		return now.Add(time.Duration(p.ForSeconds * float64(time.Second))), nil
	case !p.Until.IsZero() && !p.Until.After(now):
		return time.Time{}, fmt.Errorf("until %s is in the past", p.Until.Format(time.RFC3339))
	}
	return p.Until, nil
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, code int, err error) {
	writeJSON(w, code, map[string]any{"error": map[string]string{"message": err.Error(), "type": "scheduler_error"}})
}
