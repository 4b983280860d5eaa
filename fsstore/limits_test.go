package fsstore

import (
	"aipm/fsstore/internal/storage"
	"errors"
	"strings"
	"testing"
)

func TestCheckEnum(t *testing.T) {
	var ce *storage.CodeError
	for _, v := range []string{"", "doing", strings.Repeat("x", 1<<20)} {
		err := CheckStatus(v)
		if !errors.As(err, &ce) || ce.Code != "invalid_status" || len(err.Error()) > 300 {
			t.Errorf("status %.20q: %v", v, err)
		}
	}
	if err := CheckStatus(StatusTodo); err != nil {
		t.Error(err)
	}
}
