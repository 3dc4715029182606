"""UI Automation ids and the mapping of one cached element to an AccessibleElement."""

from __future__ import annotations

import re

import pytest

from rigway.agent.backends.base import AccessibleElement
from rigway.agent.backends.windows import uia_model as uia
from rigway.agent.backends.windows.abi import DECLARING_MODULES
from rigway.agent.backends.windows.geometry import OutputPlacement
from rigway.agent.backends.windows.uia_model import UiaNode, UiaRecord, to_element
from tests.agent.windows.fake_uia import record

PRIMARY = OutputPlacement(left=0, top=0, width=1920, height=1080)
CAPTURE = (1920, 1080)


def _map(rec: UiaRecord, value: str | None = None) -> AccessibleElement | None:
    return to_element(rec, value, PRIMARY, CAPTURE)


# --- Roles ------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("control_type_name", "role"),
    [
        ("Button", "push button"),
        ("CheckBox", "check box"),
        ("ComboBox", "combo box"),
        ("Edit", "text"),
        ("Hyperlink", "link"),
        ("ListItem", "list item"),
        ("List", "list"),
        ("MenuItem", "menu item"),
        ("RadioButton", "radio button"),
        ("Slider", "slider"),
        ("Spinner", "spin button"),
        ("TabItem", "page tab"),
        ("Text", "label"),
        ("TreeItem", "tree item"),
        ("SplitButton", "push button menu"),
        ("HeaderItem", "table column header"),
        ("Window", "window"),
        ("Pane", "panel"),
    ],
)
def test_control_type_shared_with_atspi_maps_to_its_atspi_role(
    control_type_name: str, role: str
) -> None:
    assert uia.role_name(record(control_type_name, (0, 0, 1, 1))) == role


def test_every_control_type_from_50000_to_50040_has_a_role() -> None:
    assert sorted(uia.ROLE_NAMES) == list(range(50000, 50041))
    assert all(name == name.lower() and name.strip() == name for name in uia.ROLE_NAMES.values())


def test_control_type_ids_are_named_in_order() -> None:
    assert uia.CONTROL_TYPE_IDS["UIA_ButtonControlTypeId"] == 50000
    assert uia.CONTROL_TYPE_IDS["UIA_EditControlTypeId"] == 50004
    assert uia.CONTROL_TYPE_IDS["UIA_WindowControlTypeId"] == 50032
    assert uia.CONTROL_TYPE_IDS["UIA_PaneControlTypeId"] == 50033
    assert uia.CONTROL_TYPE_IDS["UIA_AppBarControlTypeId"] == 50040


def test_unknown_control_type_is_named_by_its_number() -> None:
    rec = UiaRecord(runtime_id=(1,), rect=(0, 0, 5, 5), control_type=50099)
    assert uia.role_name(rec) == "control type 50099"


def test_password_edit_is_password_text() -> None:
    assert uia.role_name(record("Edit", (0, 0, 1, 1), is_password=True)) == "password text"


# --- Keys -------------------------------------------------------------------------------
def test_key_is_runtime_id_joined_by_dots() -> None:
    rec = record("Button", (0, 0, 5, 5), runtime_id=(42, 1234, -7))
    assert uia.element_key(rec) == "uia:42.1234.-7"


def test_empty_runtime_id_falls_back_to_pid_automation_id_type_and_path() -> None:
    rec = record("Button", (0, 0, 5, 5), runtime_id=(), pid=9, automation_id="ok")
    assert uia.element_key(rec, (0, 3, 1)) == "uia:9:ok:50000:0.3.1"


def test_fallback_keys_differ_by_path() -> None:
    rec = record("Button", (0, 0, 5, 5), runtime_id=())
    assert uia.element_key(rec, (0, 1)) != uia.element_key(rec, (0, 2))


# --- What is dropped --------------------------------------------------------------------
def test_offscreen_element_is_dropped() -> None:
    assert _map(record("Button", (10, 10, 50, 20), offscreen=True)) is None


@pytest.mark.parametrize("rect", [(10, 10, 0, 20), (10, 10, 50, 0), (10, 10, -5, 20)])
def test_element_without_area_is_dropped(rect: tuple[int, int, int, int]) -> None:
    assert _map(record("Button", rect)) is None


def test_disabled_pane_that_takes_no_focus_is_dropped() -> None:
    pane = record("Pane", (0, 0, 100, 100), enabled=False, keyboard_focusable=False)
    assert _map(pane) is None


def test_disabled_pane_that_takes_focus_is_kept() -> None:
    pane = record("Pane", (0, 0, 100, 100), enabled=False, keyboard_focusable=True)
    assert _map(pane) is not None


def test_disabled_button_is_kept() -> None:
    assert _map(record("Button", (0, 0, 100, 30), enabled=False)) is not None


def test_element_wholly_outside_the_capture_is_dropped() -> None:
    assert _map(record("Button", (2000, 10, 50, 20))) is None


# --- Rectangles -------------------------------------------------------------------------
def test_rect_is_moved_by_the_capture_origin() -> None:
    # The captured monitor sits left of the primary one.
    left_monitor = OutputPlacement(left=-1280, top=0, width=1280, height=1024)
    mapped = to_element(record("Button", (-1000, 100, 80, 30)), None, left_monitor, (1280, 1024))
    assert mapped is not None
    assert (mapped.x, mapped.y, mapped.w, mapped.h) == (280, 100, 80, 30)


def test_rect_is_clipped_to_the_capture() -> None:
    mapped = _map(record("Pane", (-20, 1060, 100, 50)))
    assert mapped is not None
    assert (mapped.x, mapped.y, mapped.w, mapped.h) == (0, 1060, 80, 20)


# --- Values and masking -----------------------------------------------------------------
def test_password_element_is_masked_without_value_even_when_handed_one() -> None:
    mapped = _map(record("Edit", (0, 0, 100, 20), is_password=True), value="hunter2")
    assert mapped is not None
    assert mapped.masked
    assert mapped.value is None


def test_text_field_takes_the_value_it_is_given() -> None:
    mapped = _map(record("Edit", (0, 0, 100, 20)), value="alice")
    assert mapped is not None
    assert (mapped.masked, mapped.value) == (False, "alice")


@pytest.mark.parametrize(
    ("state", "value"),
    [
        (uia.ToggleState_On, "checked"),
        (uia.ToggleState_Off, "unchecked"),
        (uia.ToggleState_Indeterminate, "mixed"),
    ],
)
def test_toggle_state_is_the_value_of_a_check_box(state: int, value: str) -> None:
    mapped = _map(record("CheckBox", (0, 0, 20, 20), toggle_state=state))
    assert mapped is not None
    assert mapped.value == value


def test_element_without_value_or_toggle_has_no_value() -> None:
    mapped = _map(record("Button", (0, 0, 20, 20)))
    assert mapped is not None
    assert mapped.value is None


def test_long_value_is_cut_to_the_cap() -> None:
    mapped = _map(record("Edit", (0, 0, 100, 20)), value="x" * (uia.MAX_VALUE_CHARS + 5))
    assert mapped is not None
    assert mapped.value == "x" * uia.MAX_VALUE_CHARS


def test_focus_and_name_are_carried_over() -> None:
    mapped = _map(record("Edit", (0, 0, 100, 20), "Username", focused=True))
    assert mapped is not None
    assert (mapped.name, mapped.focused, mapped.role) == ("Username", True, "text")


# --- What the queries ask for -----------------------------------------------------------
def test_record_request_never_includes_a_value() -> None:
    assert uia.UIA_ValueValuePropertyId not in uia.RECORD_PROPERTY_IDS
    assert uia.UIA_ValueValuePropertyId not in uia.CHILDREN_QUERY.property_ids
    assert uia.UIA_ValueValuePropertyId not in uia.ROOT_QUERY.property_ids


def test_value_query_excludes_passwords_by_condition() -> None:
    conditions = uia.VALUE_QUERY.conditions
    assert uia.PropertyCondition(uia.UIA_IsPasswordPropertyId, False) in conditions
    assert uia.PropertyCondition(uia.UIA_IsValuePatternAvailablePropertyId, True) in conditions
    assert uia.VALUE_QUERY.property_ids == (
        uia.UIA_RuntimeIdPropertyId,
        uia.UIA_ValueValuePropertyId,
    )


def test_children_query_searches_children_in_the_control_view() -> None:
    assert uia.CHILDREN_QUERY.scope == uia.TreeScope_Children
    assert uia.CHILDREN_QUERY.control_view


# --- Declarations -----------------------------------------------------------------------
def test_uia_model_is_a_declaring_module() -> None:
    assert "uia_model" in DECLARING_MODULES


def test_every_queried_property_is_declared() -> None:
    queried = {*uia.RECORD_PROPERTY_IDS, *uia.VALUE_QUERY.property_ids}
    assert queried <= set(uia.ABI.constants.values())
    assert queried <= set(uia.PROPERTY_IDS.values())


def test_names_absent_from_headers_are_all_declared() -> None:
    assert set(uia.ABI.absent_from_headers) <= set(uia.ABI.constants)


def test_property_ids_are_checked_against_headers() -> None:
    assert not set(uia.PROPERTY_IDS) & set(uia.ABI.absent_from_headers)


def test_timeout_hresult_is_signed() -> None:
    assert uia.UIA_E_TIMEOUT == 0x80131505 - 2**32


@pytest.mark.parametrize("name", sorted(uia.GUIDS))
def test_guid_is_in_registry_form(name: str) -> None:
    pattern = r"\{[0-9A-F]{8}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{4}-[0-9A-F]{12}\}"
    assert re.fullmatch(pattern, uia.GUIDS[name])


# --- Fallback root ----------------------------------------------------------------------
def test_fallback_root_skips_the_empty_window_and_offscreen_ones() -> None:
    empty = UiaNode("empty", record("Window", (0, 0, 500, 400), native_window_handle=77))
    hidden = UiaNode("hidden", record("Window", (0, 0, 500, 400), offscreen=True))
    flat = UiaNode("flat", record("Window", (0, 0, 0, 0)))
    content = UiaNode("content", record("Window", (0, 0, 500, 400), native_window_handle=78))
    assert uia.pick_fallback_root([empty, hidden, flat, content], empty_hwnd=77) is content


def test_fallback_root_is_none_without_candidates() -> None:
    assert uia.pick_fallback_root([], empty_hwnd=77) is None


# --- Cached values as comtypes hands them back ------------------------------------------
NOT_SUPPORTED = object()  # UI Automation's ReservedNotSupportedValue, an IUnknown


def test_cached_values_become_a_record() -> None:
    cached: dict[int, object] = {
        uia.UIA_RuntimeIdPropertyId: (42, 1234, 7),
        uia.UIA_BoundingRectanglePropertyId: (10.0, 20.4, 99.6, 30.0),
        uia.UIA_ControlTypePropertyId: 50004,
        uia.UIA_NamePropertyId: "Username",
        uia.UIA_HasKeyboardFocusPropertyId: True,
        uia.UIA_IsPasswordPropertyId: False,
        uia.UIA_ProcessIdPropertyId: 4242,
        uia.UIA_NativeWindowHandlePropertyId: 0x1F0A2,
    }
    rec = uia.record_from_cached(cached)
    assert rec.runtime_id == (42, 1234, 7)
    assert rec.rect == (10, 20, 100, 30)
    assert (rec.control_type, rec.name, rec.focused, rec.pid) == (50004, "Username", True, 4242)
    assert rec.native_window_handle == 0x1F0A2


def test_unsupported_properties_take_the_defaults() -> None:
    rec = uia.record_from_cached(dict.fromkeys(uia.RECORD_PROPERTY_IDS, NOT_SUPPORTED))
    assert rec == UiaRecord(runtime_id=(), rect=(0, 0, 0, 0), control_type=0)


def test_missing_toggle_state_is_none_and_a_present_one_is_kept() -> None:
    assert uia.record_from_cached({}).toggle_state is None
    cached: dict[int, object] = {uia.UIA_ToggleToggleStatePropertyId: uia.ToggleState_On}
    assert uia.record_from_cached(cached).toggle_state == uia.ToggleState_On


@pytest.mark.parametrize("value", [None, (), [1, "2"], (1, True), "1.2.3", NOT_SUPPORTED])
def test_runtime_id_that_is_not_a_sequence_of_ints_is_empty(value: object) -> None:
    assert uia.runtime_id_of(value) == ()


def test_runtime_id_list_becomes_a_tuple() -> None:
    assert uia.runtime_id_of([42, -1, 3]) == (42, -1, 3)


@pytest.mark.parametrize("value", [(1.0, 2.0, 3.0), (1, 2, 3, "4"), None, NOT_SUPPORTED])
def test_malformed_rectangle_has_no_area(value: object) -> None:
    assert uia.record_from_cached({uia.UIA_BoundingRectanglePropertyId: value}).rect == (0, 0, 0, 0)


INF, NAN = float("inf"), float("nan")


@pytest.mark.parametrize(
    "value",
    [(INF, INF, -INF, -INF), (0.0, 0.0, INF, 10.0), (NAN, 0.0, 5.0, 5.0), (1.0, 2.0, 3.0, -INF)],
)
def test_rectangle_that_is_not_finite_has_no_area(value: tuple[float, ...]) -> None:
    assert uia.record_from_cached({uia.UIA_BoundingRectanglePropertyId: value}).rect == (0, 0, 0, 0)


# --- The generated type library against the declarations --------------------------------
class _Generated:
    def __init__(self, **ids: str) -> None:
        for name, value in ids.items():
            setattr(self, name, value)


def _typelib(**overrides: object) -> dict[str, object]:
    namespace: dict[str, object] = {**uia.ABI.constants}
    for name, guid in uia.GUIDS.items():
        kind, _, type_name = name.partition("_")
        attribute = "_reg_clsid_" if kind == "CLSID" else "_iid_"
        namespace[type_name] = _Generated(**{attribute: guid.lower()})
    return {**namespace, **overrides}


def test_type_library_that_agrees_has_no_differences() -> None:
    assert uia.typelib_differences(_typelib()) == []


def test_type_library_without_newer_names_has_no_differences() -> None:
    namespace = _typelib()
    del namespace["CUIAutomation8"], namespace["IUIAutomation2"], namespace["UIA_E_TIMEOUT"]
    assert uia.typelib_differences(namespace) == []


def test_different_constant_is_reported() -> None:
    (difference,) = uia.typelib_differences(_typelib(UIA_IsPasswordPropertyId=30018))
    assert difference.startswith("UIA_IsPasswordPropertyId is 30018")


def test_different_interface_id_is_reported() -> None:
    wrong = _Generated(_iid_="{00000000-0000-0000-0000-000000000001}")
    (difference,) = uia.typelib_differences(_typelib(IUIAutomationElement=wrong))
    assert difference.startswith("IID_IUIAutomationElement is")
