package events

import (
	"sync"
	"testing"
	"time"
)

// TestSlowSubscriberIsDroppedAndTold publishes more than a subscriber that reads nothing
// can hold: it is dropped and told, while publishing never waits and a reading subscriber
// gets every event in order.
func TestSlowSubscriberIsDroppedAndTold(t *testing.T) {
	b := NewBus()
	slow := b.Subscribe(4, nil)
	fast := b.Subscribe(200, nil)
	var got []int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev := range fast.C() {
			got = append(got, ev.Seq)
		}
	})

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := int64(1); i <= 100; i++ {
			b.Publish(Event{Seq: i, Kind: "port-open"})
		}
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a subscriber that reads nothing")
	}

	select {
	case <-slow.Dropped():
	default:
		t.Fatal("the slow subscriber was not told it was dropped")
	}
	n := 0
	for range slow.C() { // closed after what it could hold
		n++
	}
	if n != 4 {
		t.Errorf("the slow subscriber kept %d events, want its buffer's 4", n)
	}

	fast.Close()
	fast.Close() // twice is harmless
	wg.Wait()
	select {
	case <-fast.Dropped():
		t.Error("the fast subscriber was dropped")
	default:
	}
	if len(got) != 100 {
		t.Fatalf("the reading subscriber got %d events, want 100", len(got))
	}
	for i, seq := range got {
		if seq != int64(i+1) {
			t.Fatalf("event %d has seq %d: out of order", i, seq)
		}
	}
}

func TestSubscribeMatches(t *testing.T) {
	b := NewBus()
	s := b.Subscribe(0, func(ev Event) bool { return ev.Sandbox == "a" })
	defer s.Close()
	b.Publish(Event{Seq: 1, Sandbox: "b"})
	b.Publish(Event{Seq: 2, Sandbox: "a"})
	select {
	case ev := <-s.C():
		if ev.Seq != 2 {
			t.Errorf("got seq %d, want 2", ev.Seq)
		}
	default:
		t.Fatal("no event")
	}
	select {
	case ev := <-s.C():
		t.Errorf("unexpected event %+v", ev)
	default:
	}
}

func TestParsePoint(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in       string
		allowSeq bool
		want     Point
		bad      bool
	}{
		{in: "1h", want: Point{Time: now.Add(-time.Hour)}},
		{in: "90s", allowSeq: true, want: Point{Time: now.Add(-90 * time.Second)}},
		{in: "0s", want: Point{Time: now}},
		{in: "42", allowSeq: true, want: Point{Seq: 42}},
		{in: "0", allowSeq: true, want: Point{Seq: 0}},
		{in: "42", bad: true},
		{in: "2026-11-21T10:00:00Z", want: Point{Time: time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)}},
		{in: "2026-11-21 10:30", want: Point{Time: time.Date(2026, 11, 21, 10, 30, 0, 0, time.UTC)}},
		{in: "2026-11-21", want: Point{Time: time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)}},
		{in: "-1h", bad: true},
		{in: "-3", allowSeq: true, bad: true},
		{in: "yesterday", allowSeq: true, bad: true},
		{in: "", bad: true},
	}
	for _, tt := range tests {
		got, err := ParsePoint(tt.in, now, tt.allowSeq)
		if tt.bad {
			if err == nil {
				t.Errorf("ParsePoint(%q) = %+v, want an error", tt.in, got)
			}
			continue
		}
		if err != nil || got.Seq != tt.want.Seq || !got.Time.Equal(tt.want.Time) {
			t.Errorf("ParsePoint(%q) = %+v, %v; want %+v", tt.in, got, err, tt.want)
		}
	}
}
