package memory

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/testwait"
)

// TestIndexFollowsAnotherProcessDespiteLocalCommits: the CLI writes (memory
// import), and this host commits before its poller looks (a turn's ingest,
// a refused store): the index must still pick the CLI's write up. It once
// took the local commit's generation as its own and never rebuilt, so the
// imported memory never reached a prompt.
func TestIndexFollowsAnotherProcessDespiteLocalCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "state.db")
	st, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	s := Open(st, Options{})
	if err := s.StartIndex(ctx); err != nil {
		t.Fatal(err)
	}
	defer s.StopIndex()

	st2, err := store.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer st2.Close()
	cli := Open(st2, Options{})
	for i, content := range []string{"I deploy on Fridays after lunch.", "The staging port is 9090."} {
		// Back to back, well within the poller's 500 ms.
		if _, _, err := cli.Add(ctx, NewUnit{Content: content, Scope: "default"}); err != nil {
			t.Fatal(err)
		}
		if _, _, err := s.Add(ctx, NewUnit{Content: "Local note " + string(rune('a'+i)) + ": use tabs.", Scope: "default"}); err != nil {
			t.Fatal(err)
		}
		testwait.For(t, "the index to hold the other process's memory "+content, func() bool {
			r := s.retrieveBoth(t, Query{Scope: "default", Agent: "default", Texts: []string{content}}, true)
			return strings.Contains(r.Section.Body, content)
		})
	}
}
