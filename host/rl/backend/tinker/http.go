package tinker

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	mrand "math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/metaclaw-go/metaclaw/host/rl/backend"
	"github.com/metaclaw-go/metaclaw/internal/textclip"
)

// maxErrorBody bounds how much of an error answer is read.
const maxErrorBody = 64 << 10

// response is a raw HTTP answer.
type response struct {
	status int
	header http.Header
	body   []byte
}

// send makes one HTTP request (no retries).
func (c *Client) send(ctx context.Context, method, path string, body []byte, hdr map[string]string, timeout time.Duration) (*response, error) {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	req.Header.Set("X-API-Key", c.opts.APIKey)
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", c.opts.UserAgent)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	limit := int64(c.opts.MaxResponseBytes)
	if resp.StatusCode >= 300 {
		limit = maxErrorBody
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > limit && resp.StatusCode < 300 {
		return nil, fmt.Errorf("answer larger than %d bytes", limit)
	}
	return &response{status: resp.StatusCode, header: resp.Header, body: b}, nil
}

// callOpts tune call.
type callOpts struct {
	// noRetry409: a 409 means "already exists" (checkpoint names), not a
	// lock timeout worth retrying.
	noRetry409 bool
	timeout    time.Duration
}

// call makes an API request with the SDK's HTTP retry rules: connection
// errors, timeouts, 408, 409, 429 and 5xx are retried up to MaxRetries times
// with back-off min(base·2^n, max)·jitter (or Retry-After up to 60 s), with
// one X-Idempotency-Key kept across the retries of a POST; x-should-retry
// overrides. 402 (billing) pauses 5 s and retries. Other statuses fail at
// once. The body of a 200 is returned.
func (c *Client) call(ctx context.Context, method, path string, body []byte, o callOpts) ([]byte, error) {
	hdr := map[string]string{}
	if method == http.MethodPost {
		hdr["X-Idempotency-Key"] = "metaclaw-go-retry-" + newUUID()
	}
	if o.timeout == 0 {
		o.timeout = c.opts.RequestTimeout
	}
	op := strings.TrimPrefix(path, "/api/v1/")
	var lastErr error
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			hdr["x-stainless-retry-count"] = strconv.Itoa(attempt)
		}
		resp, err := c.send(ctx, method, path, body, hdr, o.timeout)
		if err != nil {
			if ctx.Err() != nil {
				return nil, fmt.Errorf("%s %s: %w", c.name, op, ctx.Err())
			}
			lastErr = fmt.Errorf("%s %s: %w (%w)", c.name, op, err, backend.ErrUnavailable)
			if attempt >= c.opts.MaxRetries {
				return nil, lastErr
			}
			if err := c.sleep(ctx, c.backoff(attempt, nil)); err != nil {
				return nil, err
			}
			continue
		}
		if resp.status >= 200 && resp.status < 300 {
			return resp.body, nil
		}
		apiErr := c.apiError(op, resp)
		lastErr = apiErr
		retry := retryable(resp.status, o.noRetry409)
		switch resp.header.Get("x-should-retry") {
		case "true":
			retry = true
		case "false":
			retry = false
		}
		if !retry || attempt >= c.opts.MaxRetries {
			return nil, apiErr
		}
		wait := c.backoff(attempt, resp.header)
		if resp.status == http.StatusPaymentRequired {
			wait = c.opts.BillingPause
		}
		c.log.Debug().Str("op", op).Int("status", resp.status).Dur("wait", wait).Int("attempt", attempt+1).Msg("tinker: retrying")
		if err := c.sleep(ctx, wait); err != nil {
			return nil, fmt.Errorf("%w (last answer: %v)", err, lastErr)
		}
	}
}

func retryable(status int, noRetry409 bool) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status == http.StatusPaymentRequired:
		return true
	case status == http.StatusConflict:
		return !noRetry409
	case status >= 500:
		return true
	}
	return false
}

// backoff is the wait before retry attempt+1: Retry-After (ms or s, up to
// 60 s) when the server sent one, else min(base·2^attempt, max) × [0.75, 1].
func (c *Client) backoff(attempt int, h http.Header) time.Duration {
	if h != nil {
		if v, err := strconv.ParseFloat(h.Get("retry-after-ms"), 64); err == nil && v >= 0 && v <= 60000 {
			return time.Duration(v * float64(time.Millisecond))
		}
		if v, err := strconv.ParseFloat(h.Get("retry-after"), 64); err == nil && v >= 0 && v <= 60 {
			return time.Duration(v * float64(time.Second))
		}
	}
	d := float64(c.opts.RetryBase) * math.Pow(2, float64(attempt))
	d = math.Min(d, float64(c.opts.RetryMax))
	return time.Duration(d * (0.75 + 0.25*mrand.Float64()))
}

func (c *Client) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// apiError turns an error answer into a *backend.APIError, reading
// FastAPI's {"detail": …} (a string or a list of validation errors).
func (c *Client) apiError(op string, resp *response) *backend.APIError {
	msg := strings.TrimSpace(string(resp.body))
	var d struct {
		Detail json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(resp.body, &d) == nil && len(d.Detail) > 0 {
		var s string
		if json.Unmarshal(d.Detail, &s) == nil {
			msg = s
		} else {
			msg = string(d.Detail)
		}
	}
	msg = textclip.Ellipsis(msg, 500)
	if msg == "" {
		msg = http.StatusText(resp.status)
	}
	return &backend.APIError{Backend: c.name, Op: op, Status: resp.status, Message: msg}
}

func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		panic(err)
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}

// errPromiseExpired: retrieve_future answered 410; the request must be
// submitted again.
var errPromiseExpired = errors.New("promise expired (410)")
