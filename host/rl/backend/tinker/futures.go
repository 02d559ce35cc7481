package tinker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
)

// futureRef is the immediate answer to a compute POST.
type futureRef struct {
	RequestID string `json:"request_id"`
	ModelID   string `json:"model_id"`
}

// pending is a submitted request whose result has not been read. It keeps
// what is needed to submit it again after a 410.
type pending struct {
	path    string
	body    []byte
	reqType string // X-Tinker-Request-Type, e.g. "ForwardBackward"
	opts    callOpts
	ref     futureRef
}

// submit POSTs a compute request and returns its future.
func (c *Client) submit(ctx context.Context, path string, body []byte, reqType string, o callOpts) (*pending, error) {
	p := &pending{path: path, body: body, reqType: reqType, opts: o}
	if err := c.resubmit(ctx, p); err != nil {
		return nil, err
	}
	return p, nil
}

func (c *Client) resubmit(ctx context.Context, p *pending) error {
	b, err := c.call(ctx, http.MethodPost, p.path, p.body, p.opts)
	if err != nil {
		return err
	}
	var ref futureRef
	if err := json.Unmarshal(b, &ref); err != nil || ref.RequestID == "" {
		return fmt.Errorf("%s %s: answer has no request_id: %.200s", c.name, p.path, b)
	}
	p.ref = ref
	return nil
}

// result waits for p's result, submitting it again (same body, same seq_id,
// a new idempotency key) when its promise expired.
func (c *Client) result(ctx context.Context, p *pending) (json.RawMessage, error) {
	for resubmits := 0; ; resubmits++ {
		res, err := c.await(ctx, p.ref.RequestID, p.reqType)
		if !errors.Is(err, errPromiseExpired) {
			return res, err
		}
		if resubmits >= c.opts.MaxResubmits {
			return nil, fmt.Errorf("%s %s: %w %d times", c.name, p.path, err, resubmits+1)
		}
		c.log.Debug().Str("request_id", p.ref.RequestID).Msg("tinker: promise expired, submitting again")
		if err := c.resubmit(ctx, p); err != nil {
			return nil, err
		}
	}
}

// tryAgain is the body of a not-yet answer.
type tryAgain struct {
	Type       string `json:"type"`
	QueueState string `json:"queue_state"`
	Error      *json.RawMessage
}

// await polls retrieve_future for requestID until it has a result:
//
//	200 result          → returned
//	200 try_again, 408  → poll again (MinT: after a pause by queue_state)
//	200 {"error",…}     → *backend.APIError with the category
//	410                 → errPromiseExpired
//	429                 → back off min(2^n, 30)·base (or Retry-After)
//	5xx, connection     → poll again (backing off when it persists)
//	400                 → up to 3 tries (proxies inject bare 400s)
//	402                 → pause and poll again
//	other               → *backend.APIError
func (c *Client) await(ctx context.Context, requestID, reqType string) (json.RawMessage, error) {
	body, _ := json.Marshal(c.retrieveBody(requestID))
	start := time.Now()
	bad400, fails := 0, 0
	for iter := 0; ; iter++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		hdr := map[string]string{"X-Tinker-Request-Iteration": strconv.Itoa(iter), "X-Tinker-Request-Type": reqType}
		if iter == 0 {
			hdr["X-Tinker-Create-Promise-Roundtrip-Time"] = strconv.FormatFloat(time.Since(start).Seconds(), 'f', 3, 64)
		}
		resp, err := c.send(ctx, http.MethodPost, "/api/v1/retrieve_future", body, hdr, c.opts.PollTimeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			fails++
			if fails > c.opts.MaxRetries {
				return nil, fmt.Errorf("%s retrieve_future: %w (%w)", c.name, err, backend.ErrUnavailable)
			}
			if err := c.sleep(ctx, c.backoff(fails-1, nil)); err != nil {
				return nil, err
			}
			continue
		}
		switch {
		case resp.status == http.StatusOK:
			var ta tryAgain
			_ = json.Unmarshal(resp.body, &ta)
			if ta.Type == "try_again" {
				continue
			}
			if err := c.opError(reqType, resp.body); err != nil {
				return nil, err
			}
			return resp.body, nil
		case resp.status == http.StatusRequestTimeout:
			var ta tryAgain
			_ = json.Unmarshal(resp.body, &ta)
			if err := c.sleep(ctx, c.opts.PollDelay(ta.QueueState)); err != nil {
				return nil, err
			}
		case resp.status == http.StatusGone:
			return nil, errPromiseExpired
		case resp.status == http.StatusTooManyRequests:
			fails++
			if err := c.sleep(ctx, c.backoff(min(fails-1, 6), resp.header)); err != nil {
				return nil, err
			}
		case resp.status >= 500:
			fails++
			if fails > c.opts.MaxRetries {
				return nil, c.apiError("retrieve_future", resp)
			}
			if fails > 1 {
				if err := c.sleep(ctx, c.backoff(fails-2, nil)); err != nil {
					return nil, err
				}
			}
		case resp.status == http.StatusBadRequest && bad400 < 3 && !json.Valid(resp.body):
			bad400++
		case resp.status == http.StatusPaymentRequired:
			if err := c.sleep(ctx, c.opts.BillingPause); err != nil {
				return nil, err
			}
		default:
			return nil, c.apiError("retrieve_future", resp)
		}
	}
}

// retrieveBody is the retrieve_future request; MinT's protocol predates
// allow_metadata_only.
func (c *Client) retrieveBody(requestID string) any {
	if c.opts.Flavor == MinT {
		return map[string]any{"request_id": requestID}
	}
	return map[string]any{"request_id": requestID, "allow_metadata_only": false}
}

// opError recognises a failed operation's {"error": …, "category": …}.
func (c *Client) opError(reqType string, body []byte) error {
	if !bytes.Contains(body, []byte(`"error"`)) {
		return nil
	}
	var e struct {
		Error    *string `json:"error"`
		Category string  `json:"category"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error == nil {
		return nil
	}
	cat := e.Category
	if cat == "" {
		cat = "unknown"
	}
	return &backend.APIError{Backend: c.name, Op: reqType, Category: cat, Message: *e.Error}
}
