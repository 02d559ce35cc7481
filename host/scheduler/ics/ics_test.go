package ics

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	_ "time/tzdata"

	"github.com/rs/zerolog"

	"github.com/metaclaw-go/metaclaw/host/scheduler"
)

// A calendar as Google and Outlook publish it: a weekly meeting in Berlin
// time across the spring DST change, with an exception, a moved occurrence
// and an extra date; a cancelled and a transparent event; an all-day event.
const feed = "BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//Test//EN\r\n" +
	"BEGIN:VEVENT\r\nUID:weekly@test\r\nDTSTAMP:20260301T000000Z\r\nSUMMARY:Weekly sync\r\n" +
	"DTSTART;TZID=Europe/Berlin:20260316T090000\r\nDTEND;TZID=Europe/Berlin:20260316T100000\r\n" +
	"RRULE:FREQ=WEEKLY;COUNT=5\r\nEXDATE;TZID=Europe/Berlin:20260323T090000\r\n" +
	"RDATE;TZID=Europe/Berlin:20260402T140000\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:weekly@test\r\nDTSTAMP:20260301T000000Z\r\nSUMMARY:Weekly sync (moved)\r\n" +
	"RECURRENCE-ID;TZID=Europe/Berlin:20260406T090000\r\n" +
	"DTSTART;TZID=Europe/Berlin:20260407T110000\r\nDTEND;TZID=Europe/Berlin:20260407T120000\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:c@test\r\nDTSTAMP:20260301T000000Z\r\nSUMMARY:Cancelled\r\nSTATUS:CANCELLED\r\n" +
	"DTSTART:20260317T120000Z\r\nDTEND:20260317T130000Z\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:t@test\r\nDTSTAMP:20260301T000000Z\r\nSUMMARY:Reminder\r\nTRANSP:TRANSPARENT\r\n" +
	"DTSTART:20260318T120000Z\r\nDTEND:20260318T130000Z\r\nEND:VEVENT\r\n" +
	"BEGIN:VEVENT\r\nUID:a@test\r\nDTSTAMP:20260301T000000Z\r\nSUMMARY:Conference\r\n" +
	"DTSTART;VALUE=DATE:20260319\r\nDTEND;VALUE=DATE:20260320\r\nEND:VEVENT\r\n" +
	"END:VCALENDAR\r\n"

func TestParseExpandsRecurrence(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	busy, err := Parse([]byte(feed), time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), berlin)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, b := range busy {
		got = append(got, b.Start.UTC().Format("01-02T15:04")+"/"+b.End.Sub(b.Start).String()+" "+b.Summary)
	}
	got = sortStrings(got)
	want := []string{
		"03-16T08:00/1h0m0s Weekly sync", // CET
		// 03-23 excluded
		"03-18T23:00/24h0m0s Conference", // all-day in Berlin
		"03-30T07:00/1h0m0s Weekly sync", // CEST after the change: same 09:00 wall clock
		"04-02T12:00/1h0m0s Weekly sync", // RDATE
		// 04-06 moved to 04-07 11:00
		"04-07T09:00/1h0m0s Weekly sync (moved)",
		"04-13T07:00/1h0m0s Weekly sync",
	}
	if strings.Join(got, "\n") != strings.Join(sortStrings(want), "\n") {
		t.Fatalf("busy:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(sortStrings(want), "\n"))
	}
}

func sortStrings(s []string) []string {
	out := append([]string{}, s...)
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j] < out[i] {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

func TestServedFileThroughTheSource(t *testing.T) {
	hits := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits++
		if r.URL.Query().Get("token") != "s3cret" {
			http.Error(w, "forbidden", 403)
			return
		}
		w.Header().Set("Content-Type", "text/calendar")
		w.Write([]byte(feed))
	}))
	defer srv.Close()
	berlin, _ := time.LoadLocation("Europe/Berlin")
	src := scheduler.NewCalendarSource(context.Background(), scheduler.CalendarOptions{
		Name: "ics", Fetcher: &Fetcher{URL: srv.URL + "/cal.ics?token=s3cret", Location: berlin}, Log: zerolog.Nop(),
		Clock: fixed(time.Date(2026, 3, 30, 6, 0, 0, 0, time.UTC)), Location: berlin,
	})
	if err := src.FetchNow(context.Background()); err != nil {
		t.Fatal(err)
	}
	v := src.Check(time.Date(2026, 3, 30, 7, 30, 0, 0, time.UTC))
	if !v.Open || !v.Until.Equal(time.Date(2026, 3, 30, 8, 0, 0, 0, time.UTC)) || !strings.Contains(v.Reason, "Weekly sync") {
		t.Fatalf("in the meeting: %+v", v)
	}
	// A wrong token: the error names the host, never the secret.
	bad := &Fetcher{URL: srv.URL + "/cal.ics?token=wrong"}
	_, err := bad.Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour))
	if err == nil || !strings.Contains(err.Error(), "403") || strings.Contains(err.Error(), "wrong") {
		t.Fatalf("err = %v", err)
	}
	srv.Close()
	_, err = (&Fetcher{URL: srv.URL + "/cal.ics?token=s3cret"}).Fetch(context.Background(), time.Now(), time.Now().Add(time.Hour))
	if err == nil || strings.Contains(err.Error(), "s3cret") {
		t.Fatalf("offline error leaks the URL: %v", err)
	}
}

type fixed time.Time

func (f fixed) Now() time.Time { return time.Time(f) }

func TestParseRejectsGarbage(t *testing.T) {
	for _, bad := range []string{"", "hello", "BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\n"} {
		if _, err := Parse([]byte(bad), time.Now(), time.Now().Add(time.Hour), time.UTC); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(feed))
	f.Add([]byte("BEGIN:VCALENDAR\r\nBEGIN:VEVENT\r\nDTSTART:20260101T000000Z\r\nRRULE:FREQ=SECONDLY\r\nDTEND:20260101T000001Z\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n"))
	from := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, b []byte) {
		busy, err := Parse(b, from, from.Add(48*time.Hour), time.UTC)
		if err != nil {
			return
		}
		for _, x := range busy {
			if !x.End.After(x.Start) {
				t.Fatalf("empty interval %+v", x)
			}
		}
	})
}
