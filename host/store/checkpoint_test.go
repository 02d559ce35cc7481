package store

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"
)

func TestCheckpointerCopiesTheLogOffTheCommitPath(t *testing.T) {
	s, path := openTest(t)
	var auto int
	if err := s.w.QueryRow("PRAGMA wal_autocheckpoint").Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("commits still checkpoint: wal_autocheckpoint %d %v", auto, err)
	}
	body := strings.Repeat("c", 256<<10)
	for i := 0; i < 40; i++ { // 10 MiB: well past the checkpoint threshold
		tr := &Turn{SessionID: "s", Agent: "a", TurnType: "main", RequestJSON: `{}`, ResponseText: body, Status: 200}
		if err := s.RecordTurns(context.Background(), []*Turn{tr}); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; ; i++ {
		fi, err := os.Stat(path)
		if err == nil && fi.Size() > 8<<20 {
			return // the pages reached the database file
		}
		if i > 600 {
			t.Fatalf("database file still %d bytes: the log was never checkpointed", fi.Size())
		}
		time.Sleep(50 * time.Millisecond)
	}
}
