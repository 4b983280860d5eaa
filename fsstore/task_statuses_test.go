package fsstore

import "testing"

func TestStopsWork(t *testing.T) {
	for _, status := range Statuses {
		want := status == StatusBlocked || status == StatusCancelled
		if got := StopsWork(status); got != want {
			t.Errorf("StopsWork(%s) = %v, want %v", status, got, want)
		}
		kind := map[string]string{StatusBlocked: interruptPause, StatusCancelled: interruptCancel}[status]
		if got := interruptKind(status); got != kind {
			t.Errorf("interruptKind(%s) = %q, want %q", status, got, kind)
		}
	}
}
