package fsstore

import (
	"aipm/fsstore/internal/storage"
	"context"
	"errors"
	"sync"
	"testing"
	"unicode/utf8"
)

func TestParseMarkers(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []MarkerUse
	}{
		{"@@タスク作成: ログイン機能を実装", []MarkerUse{{MarkerCreate, "ログイン機能を実装"}}},
		{"＠＠タスク作成: ログイン機能を実装", []MarkerUse{{MarkerCreate, "ログイン機能を実装"}}},
		{"@＠タスク作成:x", []MarkerUse{{MarkerCreate, "x"}}},
		{"＠@タスク作成:x", []MarkerUse{{MarkerCreate, "x"}}},
		{"@@タスク作成：全角コロン", []MarkerUse{{MarkerCreate, "全角コロン"}}},
		{"@@タスク通知: レビュー完了しました", []MarkerUse{{MarkerNotify, "レビュー完了しました"}}},
		{"@@タスク調整: タスクXXXの説明を更新", []MarkerUse{{MarkerAdjust, "タスクXXXの説明を更新"}}},
		{"@@タスク開始: tsk_1", []MarkerUse{{MarkerStart, "tsk_1"}}},
		{"お願いします。\n@@タスク作成: A\n@@タスク通知: B", []MarkerUse{{MarkerCreate, "A"}, {MarkerNotify, "B"}}},
		{"@@@タスク作成: three at signs", []MarkerUse{{MarkerCreate, "three at signs"}}},
		{"ログイン機能を作ってください", nil},
		{"@タスク作成: one at sign", nil},
		{"@@タスク作成 no colon", nil},
		{"@@タスク削除: unknown word", nil},
		{"＠＠ タスク作成: space", nil},
		{"@@", nil},
		{"", nil},
		// Only ordinary text counts: not code, inline code or a quote.
		{"例:\n```\n@@タスク作成: in a fence\n```\n", nil},
		{"~~~~\n@@タスク作成: tilde fence\n~~~\nstill code", nil},
		{"```\nunclosed fence\n@@タスク作成: x", nil},
		{"use `@@タスク作成: x` to ask", nil},
		{"use ``a ` @@タスク作成: x`` to ask", nil},
		{"> @@タスク作成: quoted\nok", nil},
		{"  >@@タスク開始: quoted", nil},
		{"```\ncode\n```\n@@タスク作成: after the fence", []MarkerUse{{MarkerCreate, "after the fence"}}},
		{"`code` @@タスク作成: after `x`", []MarkerUse{{MarkerCreate, "after `x`"}}},
		{"a ` lone backtick @@タスク作成: x", []MarkerUse{{MarkerCreate, "x"}}},
		{"a > b @@タスク作成: x", []MarkerUse{{MarkerCreate, "x"}}},
		// An indented code block (four columns or more, not continuing a
		// paragraph) is code too; three spaces are not, nor a paragraph's
		// indented continuation line (CommonMark).
		{"例:\n\n    @@タスク作成: indented code", nil},
		{"    @@タスク作成: indented first line", nil},
		{"\t@@タスク作成: a tab", nil},
		{"  \t@@タスク作成: spaces and a tab", nil},
		{"例:\n\n    code\n\n    @@タスク作成: code after a blank line", nil},
		{"> quote\n    @@タスク作成: after a quote", nil},
		{"```\nx\n```\n    @@タスク作成: after a fence", nil},
		{"   @@タスク作成: three spaces", []MarkerUse{{MarkerCreate, "three spaces"}}},
		{"text\n    @@タスク作成: continues the paragraph", []MarkerUse{{MarkerCreate, "continues the paragraph"}}},
		{"    code\n\n@@タスク作成: after the code", []MarkerUse{{MarkerCreate, "after the code"}}},
		// The three later markers (seed 003 将来拡張): @@タスク確認 and
		// @@完了報告 need no colon, but their word must end there.
		{"@@タスク確認", []MarkerUse{{MarkerCheck, ""}}},
		{"＠＠タスク確認：blocked only", []MarkerUse{{MarkerCheck, "blocked only"}}},
		{"@@タスク確認 お願いします", []MarkerUse{{MarkerCheck, "お願いします"}}},
		{"@@タスク確認。", []MarkerUse{{MarkerCheck, "。"}}},
		{"@@タスク確認済み", nil},
		{"@@ブロック報告: API キー待ち", []MarkerUse{{MarkerBlock, "API キー待ち"}}},
		{"@@ブロック報告 no colon", nil},
		{"@@完了報告", []MarkerUse{{MarkerComplete, ""}}},
		{"@@完了報告: テスト通過", []MarkerUse{{MarkerComplete, "テスト通過"}}},
		{"＠@完了報告\n全部終わりました", []MarkerUse{{MarkerComplete, "全部終わりました"}}},
		{"@@完了報告書を書いた", nil},
		{"@@完了報告します", []MarkerUse{{MarkerComplete, "します"}}},
		{"@@タスク確認をお願いします", []MarkerUse{{MarkerCheck, "をお願いします"}}},
		{"@@完了報告2", nil},
		{"`@@完了報告` と書いてね", nil},
		{"> @@ブロック報告: quoted", nil},
		{"@@タスク確認 @@完了報告 done", []MarkerUse{{MarkerCheck, ""}, {MarkerComplete, "done"}}},
	} {
		got := ParseMarkers(tc.text)
		if len(got) != len(tc.want) {
			t.Errorf("%q: got %v, want %v", tc.text, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%q: got %v, want %v", tc.text, got, tc.want)
			}
		}
	}
}

func FuzzParseMarkers(f *testing.F) {
	for _, s := range []string{"@@タスク作成: x", "＠＠タスク通知：y", "@＠タスク調整:", "@@@@タスク開始:@@タスク作成:", "\xff@@", "＠", "@@タスク確認", "@@完了報告書", "@@ブロック報告：x",
		"    @@タスク作成: x", "a\n\n\t@@タスク作成: x\n\nb @@タスク通知: y", "> q\n```\n`x`\n```\n  \t @@完了報告"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		// What is not ordinary text is blanked in place: same length,
		// newlines where they were, nothing else changed but to spaces.
		ord := ordinaryText(s)
		if len(ord) != len(s) {
			t.Fatalf("ordinaryText(%q) is %d bytes long, not %d", s, len(ord), len(s))
		}
		for i := range len(s) {
			if ord[i] != s[i] && (ord[i] != ' ' || s[i] == '\n') {
				t.Fatalf("ordinaryText(%q) changed byte %d from %q to %q", s, i, s[i], ord[i])
			}
		}
		uses := ParseMarkers(s)
		for _, u := range uses {
			if _, ok := markerInfo[u.Marker]; !ok {
				t.Fatalf("unknown marker %q from %q", u.Marker, s)
			}
			if utf8.ValidString(s) && !utf8.ValidString(u.Body) {
				t.Fatalf("body %q of valid text %q is not valid UTF-8", u.Body, s)
			}
			if len(u.Body) > len(s) {
				t.Fatalf("body longer than the text")
			}
		}
		// A text with a marker in it still has it with text after it (text
		// before it could open a fence or make a quote ordinary).
		if len(uses) > 0 {
			if again := ParseMarkers(s + " y"); len(again) < len(uses) {
				t.Fatalf("%q: %d markers, with text around it %d", s, len(uses), len(again))
			}
		}
	})
}

// One marked message authorizes one operation, however many callers race
// for it: the check, the operation and the record are under one lock.
func TestWithMarkerOnce(t *testing.T) {
	s, cfg := testStoreWith(t)
	ctx := context.Background()
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "lead", To: "coder", Content: "@@タスク作成: one task"}); err != nil {
		t.Fatal(err)
	}
	receive(t, s)
	if ran, used := raceWithMarker(t, s, 8); ran != 1 || used != 7 {
		t.Fatalf("op ran %d times, %d refused as used; want 1 and 7", ran, used)
	}
	// A failed operation does not use the message.
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "lead", To: "coder", Content: "@@タスク通知: note"}); err != nil {
		t.Fatal(err)
	}
	receive(t, s)
	boom := errors.New("boom")
	if err := s.WithMarker(ctx, coderSes, MarkerNotify, func(Message, string) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatal(err)
	}
	if err := s.WithMarker(ctx, coderSes, MarkerNotify, func(Message, string) (string, error) { return "ntf_x", nil }); err != nil {
		t.Fatalf("after a failed operation: %v", err)
	}
	wantLatestReceivedMarks(t, s, cfg)
}

// raceWithMarker has callers goroutines race to use coder's latest
// message, "@@タスク作成: one task" from lead, for one operation each. It
// returns how many operations ran and how many callers were refused
// because the message was used.
func raceWithMarker(t *testing.T, s *Store, callers int) (ran, used int) {
	t.Helper()
	ctx := context.Background()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := s.WithMarker(ctx, coderSes, MarkerCreate, func(msg Message, body string) (string, error) {
				mu.Lock()
				ran++
				mu.Unlock()
				if body != "one task" || msg.SenderID != "lead" {
					t.Errorf("op got %q from %s", body, msg.SenderID)
				}
				return "tsk_x", nil
			})
			var ce *storage.CodeError
			switch {
			case err == nil:
			case errors.As(err, &ce) && ce.Code == storage.CodeMarkerAlreadyUsed:
				mu.Lock()
				used++
				mu.Unlock()
			default:
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	return ran, used
}

// wantLatestReceivedMarks: the agent's own later messages and system
// messages do not hide the latest message received; a newer message from
// someone else does.
func wantLatestReceivedMarks(t *testing.T, s *Store, cfg *storage.Config) {
	t.Helper()
	ctx := context.Background()
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "lead", To: "coder", Content: "@@タスク開始: go"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "coder", To: "lead", Content: "ok"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: storage.SystemSender, To: "coder", Content: "system note", Kind: KindSystem}); err != nil {
		t.Fatal(err)
	}
	receive(t, s)
	if m, err := s.lastReceived("coder", ""); err != nil || m == nil || m.Content != "@@タスク開始: go" {
		t.Fatalf("LastReceived: %+v %v", m, err)
	}
	if _, err := s.Send(ctx, cfg, OutgoingMessage{From: "lead", To: "coder", Content: "never mind"}); err != nil {
		t.Fatal(err)
	}
	receive(t, s)
	var ce *storage.CodeError
	if err := s.WithMarker(ctx, coderSes, MarkerStart, func(Message, string) (string, error) { return "", nil }); !errors.As(err, &ce) || ce.Code != "task_start_marker_required" {
		t.Fatalf("after an unmarked message: %v", err)
	}
}

// coderSes is a session of coder with no batch of its own: what it has
// received is what coder's read cursor is past.
var coderSes = Session{Agent: "coder"}

// receive marks everything sent to coder so far as received (the read
// cursor moves past it), as a session's get_pending_messages does.
func receive(t *testing.T, s *Store) {
	t.Helper()
	if _, _, err := s.Unread(context.Background(), "coder", 0, false); err != nil {
		t.Fatal(err)
	}
}

// testStoreWith is a project with a human lead and an AI coder whose parent
// it is.
func testStoreWith(t *testing.T) (*Store, *storage.Config) {
	t.Helper()
	s := newTestStore(t)
	for _, a := range []NewAgent{{ID: "lead", Type: storage.AgentHuman}, {ID: "coder", Type: storage.AgentAI, Parent: "lead"}} {
		if _, err := s.AddAgent(context.Background(), a); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := s.files.LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return s, cfg
}
