package weft

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

func TestVersionMatchesTheGeneratedABI(t *testing.T) {
	if err := CheckVersion(); err != nil {
		t.Fatalf("the library of this build should pass: %v", err)
	}
	_, _, _, abi := Version()
	if abi != ABIVersion {
		t.Fatalf("library ABI %d, generated for %d", abi, ABIVersion)
	}
}

func TestAnotherABIIsRefusedNamingBothVersions(t *testing.T) {
	err := checkABI("9.9.9", ABIVersion+7, ABIVersion)
	if !errors.Is(err, ErrUnsupported) {
		t.Fatalf("want ErrUnsupported, got %v", err)
	}
	for _, want := range []string{
		fmt.Sprintf("libweft 9.9.9 has ABI version %d", ABIVersion+7),
		fmt.Sprintf("generated for ABI version %d", ABIVersion),
	} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("message %q lacks %q", err.Error(), want)
		}
	}
}

func TestEveryCallFailsWithTheVersionErrorOnAMismatch(t *testing.T) {
	saved := errLibrary
	errLibrary = checkABI("9.9.9", ABIVersion+1, ABIVersion)
	defer func() { errLibrary = saved }()
	if _, err := Zeros(2); !errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "generated for ABI") {
		t.Fatalf("want the version error, got %v", err)
	}
}

func TestFloat16AndBFloat16Conversions(t *testing.T) {
	// Bit patterns worked out by hand from IEEE 754 binary16 and bfloat16.
	cases := []struct {
		f    float32
		h, b uint16
	}{
		{1, 0x3c00, 0x3f80}, {-2, 0xc000, 0xc000}, {0.5, 0x3800, 0x3f00}, {65504, 0x7bff, 0x4780},
		{0, 0, 0}, {1e6, 0x7c00, 0x4974}, {5.960464477539063e-08, 0x0001, 0x3380},
	}
	// Subnormal halves, as numpy's astype(float16) rounds them.
	for _, c := range []struct {
		f float32
		h uint16
	}{{1e-7, 0x2}, {6.1e-5, 0x3ff}, {3e-5, 0x1f7}, {2.98e-8, 0}, {1.5 * 5.960464477539063e-08, 0x2}} {
		if got := Float16FromFloat32(c.f); uint16(got) != c.h {
			t.Errorf("Float16FromFloat32(%g) = %#04x, want %#04x", c.f, uint16(got), c.h)
		}
	}
	for _, c := range cases {
		if got := Float16FromFloat32(c.f); uint16(got) != c.h {
			t.Errorf("Float16FromFloat32(%g) = %#04x, want %#04x", c.f, uint16(got), c.h)
		}
		if got := BFloat16FromFloat32(c.f); uint16(got) != c.b {
			t.Errorf("BFloat16FromFloat32(%g) = %#04x, want %#04x", c.f, uint16(got), c.b)
		}
		if c.h != 0x7c00 {
			if back := Float16(c.h).Float32(); back != c.f {
				t.Errorf("Float16(%#04x).Float32() = %g, want %g", c.h, back, c.f)
			}
		}
	}
	// 1 + 2^-11 is halfway between two halves: ties go to the even one, 1.
	if got := Float16FromFloat32(1 + 1.0/2048); got != 0x3c00 {
		t.Errorf("tie rounded to %#04x, want 0x3c00", uint16(got))
	}
}
