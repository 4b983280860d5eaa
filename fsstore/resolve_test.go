package fsstore

import (
	"aipm/fsstore/internal/storage"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

func TestResolveID(t *testing.T) {
	s := newTestStore(t)
	for _, id := range []string{"tsk_01M7YZWACRA0328GMTHNDHB18Z", "tsk_01M7YZWACRA0328GMTHNDHB190", "tsk_01M7YZWACRA0328GMTHNDHC000"} {
		if err := s.files.WriteDoc(filepath.Join(s.files.CollectionDir(storage.Tasks), id+".json"), Task{ID: id}, storage.ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		arg, want string
		kind      error
		msg       string // a part of the error
	}{
		{arg: "tsk_01M7YZWACRA0328GMTHNDHB18Z", want: "tsk_01M7YZWACRA0328GMTHNDHB18Z"},
		{arg: "01M7YZWACRA0328GMTHNDHB18Z", want: "tsk_01M7YZWACRA0328GMTHNDHB18Z"},
		{arg: "01m7yzwacra0328gmthndhb19", want: "tsk_01M7YZWACRA0328GMTHNDHB190"},
		{arg: "TSK_01M7YZWACRA0328GMTHNDHC", want: "tsk_01M7YZWACRA0328GMTHNDHC000"},
		{arg: "01M7YZWACRA0328GMTHNDHB", kind: storage.ErrAmbiguous, msg: "matches 2 tasks (tsk_01M7YZWACRA0328GMTHNDHB18Z, tsk_01M7YZWACRA0328GMTHNDHB190)"},
		{arg: "tsk_0", kind: storage.ErrAmbiguous, msg: "matches 3 tasks"},
		{arg: "02", kind: storage.ErrNotFound, msg: `no task id starts with "02"`},
		{arg: "tsk_01M7YZWACRA0328GMTHNDHB191", kind: storage.ErrNotFound, msg: "task tsk_01M7YZWACRA0328GMTHNDHB191 does not exist"},
		{arg: "", kind: storage.ErrInvalid},
		{arg: "tsk_", kind: storage.ErrInvalid},
		{arg: "../x", kind: storage.ErrInvalid},
		{arg: "tsk_01I", kind: storage.ErrInvalid},               // I is not Crockford base32
		{arg: strings.Repeat("0", 27), kind: storage.ErrInvalid}, // longer than an id
		{arg: "msg_01M7YZ", kind: storage.ErrInvalid},            // another kind of id
	} {
		got, err := s.ResolveID(storage.Tasks, tc.arg)
		if tc.kind == nil {
			if err != nil || got != tc.want {
				t.Errorf("ResolveID(%q) = %q, %v; want %q", tc.arg, got, err, tc.want)
			}
			continue
		}
		if !errors.Is(err, tc.kind) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("ResolveID(%q) = %q, %v; want a %v error containing %q", tc.arg, got, err, tc.kind, tc.msg)
		}
	}
}

func TestResolveIDListsAtMostTen(t *testing.T) {
	s := newTestStore(t)
	for i := 0; i < 12; i++ {
		id := storage.NewID(storage.PrefixTask)
		if err := s.files.WriteDoc(filepath.Join(s.files.CollectionDir(storage.Tasks), id+".json"), Task{ID: id}, storage.ModeFile); err != nil {
			t.Fatal(err)
		}
	}
	_, err := s.ResolveID(storage.Tasks, "tsk_")
	if !errors.Is(err, storage.ErrInvalid) {
		t.Fatalf("an empty prefix: %v, want ErrInvalid", err)
	}
	_, err = s.ResolveID(storage.Tasks, "0")
	if !errors.Is(err, storage.ErrAmbiguous) || !strings.Contains(err.Error(), "matches 12 tasks") || !strings.Contains(err.Error(), "and 2 more") {
		t.Fatalf("12 matches: %v", err)
	}
}
