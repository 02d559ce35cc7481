package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// POST /v1/memory/ingest is durable and asynchronous: the request is checked,
// each turn's text capped, and a job enqueued in the request's context (a
// client that goes away before that enqueues nothing); the answer is 202
// with the job id, and GET /v1/memory/ingest/{id} tells how it went.
// Extraction then runs on the core's job worker, never while the client
// (or /v1/status) waits. ?wait=1 keeps MetaClaw's synchronous answer for
// callers that need the counts; it stops (and rolls back) when the client
// disconnects.

// JobAPIIngest runs an ingest request (payload apiIngestJob).
const JobAPIIngest = "memory_api_ingest"

// JobQueue enqueues durable jobs (core.Core).
type JobQueue interface {
	EnqueueID(ctx context.Context, kind string, payload any, runAfter time.Time) (int64, error)
}

// apiIngestJob is the request as received, with the scope and agent it
// resolved to from the request's headers and path.
type apiIngestJob struct {
	Request IngestRequest `json:"request"`
	Scope   string        `json:"scope"`
	Agent   string        `json:"agent"`
}

// IngestAccepted is the 202 answer.
type IngestAccepted struct {
	JobID     int64  `json:"job_id"`
	Status    string `json:"status"` // queued
	StatusURL string `json:"status_url"`
}

// IngestJobStatus is GET /v1/memory/ingest/{id}.
type IngestJobStatus struct {
	JobID     int64  `json:"job_id"`
	Status    string `json:"status"` // pending | running | done | failed
	Attempts  int    `json:"attempts"`
	LastError string `json:"last_error,omitempty"`
}

// wantsWait: ?wait=1|true asks for the synchronous answer.
func wantsWait(r *http.Request) bool {
	v := strings.ToLower(r.URL.Query().Get("wait"))
	return v == "1" || v == "true" || v == "yes"
}

func capTurns(ts []Turn) {
	for i := range ts {
		ts[i].User = textclip.Prefix(ts[i].User, maxTurnText)
		ts[i].Assistant = textclip.Prefix(ts[i].Assistant, maxTurnText)
	}
}

func (a *API) enqueue(w http.ResponseWriter, r *http.Request, job apiIngestJob) {
	id, err := a.Jobs.EnqueueID(r.Context(), JobAPIIngest, job, time.Time{})
	if err != nil {
		a.fail(w, fmt.Errorf("memory: enqueue ingestion: %w", err))
		return
	}
	w.Header().Set("Location", "/v1/memory/ingest/"+strconv.FormatInt(id, 10))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_ = json.NewEncoder(w).Encode(IngestAccepted{JobID: id, Status: "queued", StatusURL: "/v1/memory/ingest/" + strconv.FormatInt(id, 10)})
}

// RunJob is the JobAPIIngest handler.
func (a *API) RunJob(ctx context.Context, payload json.RawMessage) error {
	var j apiIngestJob
	if err := json.Unmarshal(payload, &j); err != nil {
		return fmt.Errorf("memory api ingest job: %w", err)
	}
	res, err := a.runIngest(ctx, j.Request, j.Scope, j.Agent)
	if err != nil {
		return err
	}
	a.Log.Info().Int("turns", res.Turns).Int("added", res.Added).Int("reinforced", res.Reinforced).Msg("memory: ingest request done")
	return nil
}

// ingestJob is GET /v1/memory/ingest/{id}.
func (a *API) ingestJob(w http.ResponseWriter, r *http.Request) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 64)
	if err != nil || id <= 0 {
		WriteError(w, http.StatusBadRequest, "job id must be the job_id POST /v1/memory/ingest answered with")
		return
	}
	st := IngestJobStatus{JobID: id}
	if a.Store.jobs == nil {
		WriteError(w, http.StatusServiceUnavailable, "this memory store does not see the host's jobs")
		return
	}
	job, err := a.Store.jobs.Job(r.Context(), id)
	st.Status, st.Attempts, st.LastError = job.State, job.Attempts, job.LastError
	if errors.Is(err, store.ErrNotFound) || err == nil && job.Kind != JobAPIIngest {
		WriteError(w, http.StatusNotFound, fmt.Sprintf("no memory ingest job %d", id))
		return
	}
	if err != nil {
		a.fail(w, err)
		return
	}
	writeJSON(w, st)
}
