package train

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/host/rl/samples"
	"github.com/metaclaw-go/metaclaw/host/route"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// Routes is the training API (behind the proxy's auth), used by `metaclaw
// rl …` and the dashboard's Training tab:
//
//	GET  /v1/rl/training          the loop's Status
//	GET  /v1/rl/steps             steps, newest first (?limit=, ?all=1 with rolled-back ones)
//	GET  /v1/rl/checkpoints       checkpoints recorded (and ?service=1: as the service lists them)
//	GET  /v1/rl/samples           samples, newest first (?state=, ?session=, ?limit=)
//	GET  /v1/rl/samples/{id}      one sample with its ids and log-probs
//	POST /v1/rl/step              run one step now and wait for it
//	POST /v1/rl/resume            {"checkpoint": ""|"<step>"|"<path>"}: restart the trainer
func Routes(l *Loop) []route.Route {
	return []route.Route{
		{Pattern: "GET /v1/rl/training", Handler: func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, http.StatusOK, l.Status(r.Context()))
		}},
		{Pattern: "GET /v1/rl/steps", Handler: func(w http.ResponseWriter, r *http.Request) {
			limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
			steps, err := l.o.Steps.History(r.Context(), limit, r.URL.Query().Get("all") == "1")
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			if steps == nil {
				steps = []StepRecord{}
			}
			writeJSON(w, http.StatusOK, map[string]any{"steps": steps})
		}},
		{Pattern: "GET /v1/rl/checkpoints", Handler: func(w http.ResponseWriter, r *http.Request) {
			cps, err := l.o.Steps.Checkpoints(r.Context(), r.URL.Query().Get("all") == "1")
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			out := map[string]any{"checkpoints": CheckpointList(cps)}
			if r.URL.Query().Get("service") == "1" {
				svc, err := l.Checkpoints(r.Context())
				if err != nil {
					out["service_error"] = err.Error()
				}
				if svc == nil {
					svc = []backend.Checkpoint{}
				}
				out["service"] = svc
			}
			writeJSON(w, http.StatusOK, out)
		}},
		{Pattern: "GET /v1/rl/samples", Handler: func(w http.ResponseWriter, r *http.Request) {
			q := r.URL.Query()
			limit, _ := strconv.Atoi(q.Get("limit"))
			list, err := l.o.Samples.List(r.Context(), samples.Filter{State: q.Get("state"), SessionID: q.Get("session"), Limit: limit})
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"samples": Summaries(list)})
		}},
		{Pattern: "GET /v1/rl/samples/{id}", Handler: func(w http.ResponseWriter, r *http.Request) {
			id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
			if err != nil {
				writeErr(w, http.StatusBadRequest, errors.New("sample id must be a number"))
				return
			}
			s, err := l.o.Samples.Get(r.Context(), id)
			if errors.Is(err, samples.ErrNotFound) {
				writeErr(w, http.StatusNotFound, err)
				return
			}
			if err != nil {
				writeErr(w, http.StatusInternalServerError, err)
				return
			}
			writeJSON(w, http.StatusOK, s)
		}},
		{Pattern: "POST /v1/rl/step", Handler: func(w http.ResponseWriter, r *http.Request) {
			rec, err := l.StepNow(r.Context())
			switch {
			case errors.Is(err, ErrNotReady):
				writeErr(w, http.StatusServiceUnavailable, err)
			case errors.Is(err, ErrNothingToTrain), errors.Is(err, errBatchClosed), errors.Is(err, ErrMaxSteps):
				writeErr(w, http.StatusConflict, err)
			case err != nil:
				writeErr(w, http.StatusBadGateway, err)
			default:
				writeJSON(w, http.StatusOK, map[string]any{"step": rec})
			}
		}},
		{Pattern: "POST /v1/rl/resume", Handler: func(w http.ResponseWriter, r *http.Request) {
			var in struct {
				Checkpoint string `json:"checkpoint"`
			}
			body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<10))
			if len(body) > 0 {
				if err := json.Unmarshal(body, &in); err != nil {
					writeErr(w, http.StatusBadRequest, errors.New(`body must be {"checkpoint": "<step number, checkpoint path, or empty for the last one>"}`))
					return
				}
			}
			req, err := l.RestartFrom(r.Context(), in.Checkpoint)
			if err != nil {
				status := http.StatusBadGateway
				if errors.Is(err, ErrBadCheckpoint) {
					status = http.StatusBadRequest
				}
				writeErr(w, status, err)
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"resumed_from": req, "status": l.Status(r.Context())})
		}},
	}
}

// CheckpointEntry is a recorded training checkpoint.
type CheckpointEntry struct {
	Step  int       `json:"step"`
	Path  string    `json:"path"`
	At    time.Time `json:"at"`
	State string    `json:"state"`
	Model string    `json:"model_id"`
}

// CheckpointList turns step rows into checkpoint entries.
func CheckpointList(rows []StepRecord) []CheckpointEntry {
	out := make([]CheckpointEntry, 0, len(rows))
	for _, r := range rows {
		out = append(out, CheckpointEntry{Step: r.Step, Path: r.CheckpointPath, At: r.FinishedAt, State: r.State, Model: r.ModelID})
	}
	return out
}

// SampleSummary is a sample without its token ids, texts shortened: what
// lists show.
type SampleSummary struct {
	ID               int64     `json:"id"`
	SessionID        string    `json:"session_id"`
	Agent            string    `json:"agent"`
	Seq              int       `json:"seq"`
	CreatedAt        time.Time `json:"created_at"`
	SkillGeneration  int64     `json:"skill_generation"`
	SamplerStep      int       `json:"sampler_step"`
	PromptTokens     int       `json:"prompt_tokens"`
	CompletionTokens int       `json:"completion_tokens"`
	Instruction      string    `json:"instruction"`
	Response         string    `json:"response"`
	Judge            string    `json:"judge,omitempty"`
	JudgeState       string    `json:"judge_state"`
	Reward           *float64  `json:"reward"`
	Votes            []string  `json:"judge_votes"`
	JudgeText        string    `json:"judge_text,omitempty"`
	Teacher          bool      `json:"teacher_logprobs"`
	State            string    `json:"state"`
	StateReason      string    `json:"state_reason,omitempty"`
	BatchID          int64     `json:"batch_id,omitempty"`
	Step             int       `json:"step,omitempty"`
}

// Summaries shortens samples for lists.
func Summaries(list []samples.Sample) []SampleSummary {
	out := make([]SampleSummary, 0, len(list))
	for _, s := range list {
		votes := s.Votes
		if votes == nil {
			votes = []string{}
		}
		out = append(out, SampleSummary{ID: s.ID, SessionID: s.SessionID, Agent: s.Agent, Seq: s.Seq, CreatedAt: s.CreatedAt,
			SkillGeneration: s.SkillGeneration, SamplerStep: s.SamplerStep, PromptTokens: len(s.Prompt), CompletionTokens: len(s.Completion),
			Instruction: textclip.Ellipsis(s.Instruction, 300), Response: textclip.Ellipsis(s.Response, 600), Judge: s.Judge, JudgeState: s.JudgeState,
			Reward: s.Reward, Votes: votes, JudgeText: textclip.Ellipsis(s.JudgeText, 600), Teacher: s.TeacherLogprobs != nil,
			State: s.State, StateReason: s.StateReason, BatchID: s.BatchID, Step: s.Step})
	}
	return out
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeErr(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]any{"error": map[string]any{"message": err.Error(), "type": "rl_error"}})
}
