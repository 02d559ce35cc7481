package dashboard_test

import (
	"context"
	"testing"

	"github.com/metaclaw-go/metaclaw/internal/browsertest"
)

func browser(t *testing.T) context.Context { return browsertest.Browser(t) }

func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	browsertest.Screenshot(t, ctx, name)
}
