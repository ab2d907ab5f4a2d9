package compat

import (
	"strings"
	"testing"
	"time"
)

// TestRenderMatrix pins the layout of COMPAT.md: known features first in
// their order, unknown ones after, a failure never overwritten by a pass.
func TestRenderMatrix(t *testing.T) {
	matrix.Lock()
	saved := matrix.cells
	matrix.cells = map[cellKey]cellResult{}
	matrix.Unlock()
	defer func() {
		matrix.Lock()
		matrix.cells = saved
		matrix.Unlock()
	}()
	record("zclient", "1.0", "zstd", true, "")
	record("zclient", "1.0", "produce", false, "broke")
	record("zclient", "1.0", "produce", true, "")
	record("aclient", "2.0", "exotic", true, "")
	got := renderMatrix(time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC))
	for _, want := range []string{
		"| client | version | produce | zstd | exotic |",
		"| aclient | 2.0 | - | - | pass |",
		"| zclient | 1.0 | FAIL | pass | - |",
		"- zclient 1.0, produce: broke",
		"2026-01-02 03:04 UTC",
	} {
		if !strings.Contains(got, want) {
			t.Fatalf("matrix lacks %q:\n%s", want, got)
		}
	}
	if strings.Index(got, "aclient") > strings.Index(got, "zclient") {
		t.Fatalf("rows not sorted:\n%s", got)
	}
}
