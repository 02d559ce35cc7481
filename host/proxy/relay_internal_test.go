package proxy

import (
	"bytes"
	"context"
	"io"
	"testing"
	"time"
)

// blockingReader blocks in Read until its context ends.
type blockingReader struct{ ctx context.Context }

func (b blockingReader) Read([]byte) (int, error) {
	<-b.ctx.Done()
	return 0, b.ctx.Err()
}

// trickleReader returns one byte per Read after a pause.
type trickleReader struct {
	n     int
	pause time.Duration
}

func (t *trickleReader) Read(p []byte) (int, error) {
	if t.n == 0 {
		return 0, io.EOF
	}
	time.Sleep(t.pause)
	t.n--
	p[0] = 'x'
	return 1, nil
}

func TestIdleReaderCountsOnlyWaitingOnTheUpstream(t *testing.T) {
	t.Run("slow consumer is not a stall", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ir := newIdleReader(bytes.NewReader(make([]byte, 5)), 50*time.Millisecond, cancel)
		defer ir.stop()
		buf := make([]byte, 1)
		for i := 0; i < 5; i++ {
			if _, err := ir.Read(buf); err != nil {
				t.Fatal(err)
			}
			time.Sleep(150 * time.Millisecond) // relaying to a slow client: three timeouts long
		}
		if ir.stalled() || ctx.Err() != nil {
			t.Fatal("time spent outside Read was counted against the upstream")
		}
	})
	t.Run("a line that keeps arriving is progress", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ir := newIdleReader(&trickleReader{n: 15, pause: 100 * time.Millisecond}, time.Second, cancel)
		defer ir.stop()
		if n, err := io.Copy(io.Discard, ir); err != nil || n != 15 {
			t.Fatalf("%d bytes, %v", n, err)
		}
		if ir.stalled() || ctx.Err() != nil {
			t.Fatal("a trickle longer than the timeout was cut")
		}
	})
	t.Run("a read that waits too long is cut", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		ir := newIdleReader(blockingReader{ctx}, 100*time.Millisecond, cancel)
		defer ir.stop()
		if _, err := ir.Read(make([]byte, 1)); err == nil || !ir.stalled() {
			t.Fatalf("err %v, stalled %v", err, ir.stalled())
		}
	})
}
