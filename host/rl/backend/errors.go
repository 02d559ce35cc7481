package backend

import (
	"errors"
	"fmt"
	"net/http"
)

// Sentinel errors; an *APIError matches the one its status stands for.
var (
	ErrUnauthorized = errors.New("not authorized (check rl.api_key)")
	ErrNotFound     = errors.New("not found")
	ErrConflict     = errors.New("already exists")
	ErrInvalid      = errors.New("rejected as invalid")
	ErrUnavailable  = errors.New("service unavailable")
	// ErrClosed: the Backend or Trainer was closed.
	ErrClosed = errors.New("backend closed")
	// ErrUnusable: a Trainer refuses further work because a request's fate
	// is unknown (the service may or may not have queued it); the training
	// loop resumes from the last checkpoint on a new model.
	ErrUnusable = errors.New("model unusable")
)

// APIError is an error answered by a service: an HTTP status with its
// detail, or a failed operation (Status 0, Category set).
type APIError struct {
	Backend  string // "tinker", "mint", "weaver", …
	Op       string // what was being done, e.g. "forward_backward"
	Status   int    // HTTP status; 0 for a failed operation
	Category string // Tinker: "user" | "server" | "unknown"; Weaver: error code
	Message  string
}

func (e *APIError) Error() string {
	where := e.Backend
	if e.Op != "" {
		where += " " + e.Op
	}
	switch {
	case e.Status != 0 && e.Category != "":
		return fmt.Sprintf("%s: HTTP %d %s: %s", where, e.Status, e.Category, e.Message)
	case e.Status != 0:
		return fmt.Sprintf("%s: HTTP %d: %s", where, e.Status, e.Message)
	case e.Category != "":
		return fmt.Sprintf("%s failed (%s): %s", where, e.Category, e.Message)
	}
	return fmt.Sprintf("%s failed: %s", where, e.Message)
}

// Is maps statuses and categories to the sentinel errors.
func (e *APIError) Is(target error) bool {
	switch target {
	case ErrUnauthorized:
		return e.Status == http.StatusUnauthorized || e.Status == http.StatusForbidden
	case ErrNotFound:
		return e.Status == http.StatusNotFound
	case ErrConflict:
		return e.Status == http.StatusConflict
	case ErrInvalid:
		return e.Status == http.StatusBadRequest || e.Status == http.StatusUnprocessableEntity || e.Category == "user"
	case ErrUnavailable:
		return e.Status >= 500 || e.Status == http.StatusTooManyRequests || e.Category == "server"
	}
	return false
}
