package confkey

import (
	"errors"
	"testing"
)

func TestOneOf(t *testing.T) {
	tests := []struct {
		v       string
		wantErr string
	}{
		{"on", ""},
		{"off", ""},
		{"maybe", `mode: "maybe" is not one of on, off`},
		{"", `mode: "" is not one of on, off`},
	}
	for _, tt := range tests {
		err := OneOf("mode", tt.v, "on", "off")
		if tt.wantErr == "" {
			if err != nil {
				t.Errorf("OneOf(%q) = %v, want nil", tt.v, err)
			}
			continue
		}
		var ke *Error
		if !errors.As(err, &ke) || ke.ConfigKey() != "mode" || err.Error() != tt.wantErr {
			t.Errorf("OneOf(%q) = %v, want %s", tt.v, err, tt.wantErr)
		}
	}
}

func TestDefault(t *testing.T) {
	n, s := 0, "set"
	Default(&n, 5)
	Default(&s, "default")
	if n != 5 || s != "set" {
		t.Errorf("n, s = %d, %q; want 5, %q", n, s, "set")
	}
}
