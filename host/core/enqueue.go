package core

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// EnqueueID is Enqueue returning the job's id, for callers that hand it to
// a client (POST /v1/memory/ingest answers 202 with it).
func (c *Core) EnqueueID(ctx context.Context, kind string, payload any, runAfter time.Time) (int64, error) {
	b, err := json.Marshal(payload)
	if err != nil {
		return 0, fmt.Errorf("enqueue %s: %w", kind, err)
	}
	id, err := c.st.EnqueueJob(ctx, kind, string(b), runAfter)
	if err != nil {
		return 0, err
	}
	c.job.wake(kind)
	return id, nil
}
