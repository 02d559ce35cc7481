//go:build !windows

package idle

import (
	"errors"
	"time"
)

// newLastInput is Windows's detector; elsewhere there is none.
func newLastInput(time.Duration) (Detector, error) {
	return nil, errors.New("GetLastInputInfo exists on Windows only")
}
