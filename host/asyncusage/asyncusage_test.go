package asyncusage

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
)

// Records queued before Close are all written to the store by then; one
// recorded after Close is dropped and counted, without a panic.
func TestRecorderWritesOffThePath(t *testing.T) {
	ctx := context.Background()
	st, err := store.OpenSQLite(ctx, filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	a := New(st)
	for range 3 {
		if err := a.RecordUsage(ctx, store.Usage{Purpose: "embedder", Model: "m", InputTokens: 5, OK: true}); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	a.RecordUsage(ctx, store.Usage{Purpose: "embedder"})
	if a.Dropped() != 1 {
		t.Fatalf("%d dropped, want the one after Close", a.Dropped())
	}
	u, err := st.UsageByPurpose(ctx)
	if err != nil || u["embedder"].Calls != 3 || u["embedder"].InputTokens != 15 {
		t.Fatalf("usage = %+v %v", u, err)
	}
}
