package validate_test

import (
	"testing"

	"github.com/foodsafe/foodsafe/internal/apperr"
	"github.com/foodsafe/foodsafe/internal/validate"
)

// A shift is upper case: no lower-case letter of any script, as the
// former pattern ^\P{Ll}*$ said. The schema's pattern now says it for a
// to z (a form every engine compiles); the rest is the service's own
// check, with the same one violation and detail, reported beside any
// other violation of the body.
func TestShiftIsUpperCase(t *testing.T) {
	t.Parallel()
	set, err := validate.Load()
	if err != nil {
		t.Fatal(err)
	}
	for _, schema := range []string{"temperature-records.data", "cooking-temperature-records.data"} {
		for shift, ok := range map[string]bool{
			"MORNING": true, "ÉVENING": true, "NUIT 2": true, "": true, "ΠΡΩΙ": true, "朝": true, "ß": false, "Morning": false,
			"MORNINg": false, "ÉVÉNEMENt": false, "MATINé": false, "ΠΡΩΙα": false, "ꝏ": false, "𐐨": false,
		} {
			doc := map[string]any{"timestamp": "1", "value": "x", "unit": "C", "shift": shift, "equipmentId": "e", "cookingEquipmentId": "e"}
			errs := set.Validate(schema, doc, "/data")
			var shiftErrs []apperr.FieldError
			for _, e := range errs {
				if e.Pointer == "/data/shift" {
					shiftErrs = append(shiftErrs, e)
				}
			}
			if ok && len(shiftErrs) > 0 {
				t.Errorf("%s: shift %q refused: %v", schema, shift, shiftErrs)
			}
			if !ok && (len(shiftErrs) != 1 || shiftErrs[0].Detail != "must be in upper case: no lower-case letter") {
				t.Errorf("%s: shift %q: %v, want one violation saying it is not upper case", schema, shift, shiftErrs)
			}
			// The body's other violation (value is a string) is listed too.
			if !containsPointer(errs, "/data/value") {
				t.Errorf("%s: shift %q: the value's violation is missing: %v", schema, shift, errs)
			}
		}
	}
}

func containsPointer(errs []apperr.FieldError, ptr string) bool {
	for _, e := range errs {
		if e.Pointer == ptr {
			return true
		}
	}
	return false
}
