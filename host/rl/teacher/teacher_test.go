package teacher_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/metaclaw-go/metaclaw/host/config"
	"github.com/metaclaw-go/metaclaw/host/rl/teacher"
	"github.com/metaclaw-go/metaclaw/host/store"
	"github.com/metaclaw-go/metaclaw/internal/rltest"
)

func TestLogprobsOfTheSampledTokens(t *testing.T) {
	fake := rltest.NewTeacher(t)
	st, err := store.OpenSQLite(context.Background(), filepath.Join(t.TempDir(), store.DBFile))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	c := teacher.New(config.Endpoint{APIBase: fake.URL + "/v1", Model: "teacher-7b"}, st, 0)
	prompt, completion := []int32{151644, 872, 198, 9707}, []int32{9707, 1052, 151645}
	got, err := c.Logprobs(context.Background(), prompt, completion)
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{rltest.TeacherLogprob(9707), rltest.TeacherLogprob(1052), rltest.TeacherLogprob(151645)}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	usage, _ := st.UsageByPurpose(context.Background())
	if u := usage[teacher.Purpose]; u.Calls != 1 || u.InputTokens != 7 {
		t.Fatalf("usage %+v", u)
	}
}

func TestTeacherErrors(t *testing.T) {
	tests := []struct {
		name, body string
		status     int
		want       string
	}{
		{"http error", `{"error":"nope"}`, 500, "HTTP 500"},
		{"not json", `<html>`, 200, "not a completions response"},
		{"no logprobs", `{"choices":[{"text":""}]}`, 200, "no logprobs"},
		{"too few", `{"choices":[{"logprobs":{"token_logprobs":[null,-1,-2]}}]}`, 200, "3 log-probs for 2 prompt + 2 completion"},
		{"null inside", `{"choices":[{"logprobs":{"token_logprobs":[null,-1,null,-2]}}]}`, 200, "no log-prob for completion token 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			c := teacher.New(config.Endpoint{APIBase: srv.URL, Model: "t"}, nil, 0)
			_, err := c.Logprobs(context.Background(), []int32{1, 2}, []int32{3, 4})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
