"""Job Object and CreateProcessW layouts and constants, and the job-list helpers.

Pure: what `_jobs.py` hands to kernel32 and reads back, declared in `ABI` (checked
against the Windows headers), and the arithmetic over the variable-length process id
list of a job.
"""

from __future__ import annotations

import ctypes
from collections.abc import Mapping
from typing import Final

from rigway.agent.backends.windows._ctypes_types import DWORD, HANDLE, ULONG_PTR, WORD
from rigway.agent.backends.windows.abi import AbiDeclarations

__all__ = [
    "ABI",
    "CONSTANTS",
    "CREATION_FLAGS",
    "FILETIME",
    "IO_COUNTERS",
    "JOBOBJECT_BASIC_LIMIT_INFORMATION",
    "JOBOBJECT_BASIC_PROCESS_ID_LIST",
    "JOBOBJECT_EXTENDED_LIMIT_INFORMATION",
    "PROCESS_INFORMATION",
    "STARTUPINFOW",
    "job_limits",
    "parse_process_id_list",
    "process_id_list_size",
]

LARGE_INTEGER = ctypes.c_int64  # a union in C; its size and alignment are an int64's
ULONGLONG = ctypes.c_uint64
SIZE_T = ctypes.c_size_t
POINTER_T = ctypes.c_void_p  # LPWSTR/LPBYTE fields: pointer-sized, never dereferenced here

CONSTANTS: Final[Mapping[str, int]] = {
    "CREATE_SUSPENDED": 0x4,
    "CREATE_NEW_CONSOLE": 0x10,
    "CREATE_UNICODE_ENVIRONMENT": 0x400,
    "CREATE_BREAKAWAY_FROM_JOB": 0x0100_0000,
    "CREATE_DEFAULT_ERROR_MODE": 0x0400_0000,
    "JOB_OBJECT_LIMIT_BREAKAWAY_OK": 0x800,
    "JOB_OBJECT_LIMIT_SILENT_BREAKAWAY_OK": 0x1000,
    "JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE": 0x2000,
    "JobObjectBasicProcessIdList": 3,
    "JobObjectExtendedLimitInformation": 9,
    "PROCESS_TERMINATE": 0x1,
    "PROCESS_SET_QUOTA": 0x100,
    "PROCESS_QUERY_LIMITED_INFORMATION": 0x1000,
    "SYNCHRONIZE": 0x0010_0000,
    "TOKEN_QUERY": 0x8,
    "WM_CLOSE": 0x10,
    "WAIT_OBJECT_0": 0,
    "WAIT_TIMEOUT": 258,
    "WAIT_FAILED": 0xFFFF_FFFF,
    "ERROR_ACCESS_DENIED": 5,
    "ERROR_INVALID_PARAMETER": 87,
    "ERROR_MORE_DATA": 234,
}

# A console program gets a console of its own (never the agent's, whose Ctrl+C and
# close would reach it), and the agent's error mode is not inherited. Never
# CREATE_BREAKAWAY_FROM_JOB: the app would start outside the agent's job, if any.
CREATION_FLAGS: Final = (
    CONSTANTS["CREATE_SUSPENDED"]
    | CONSTANTS["CREATE_UNICODE_ENVIRONMENT"]
    | CONSTANTS["CREATE_NEW_CONSOLE"]
    | CONSTANTS["CREATE_DEFAULT_ERROR_MODE"]
)


class FILETIME(ctypes.Structure):
    _fields_ = (("dwLowDateTime", DWORD), ("dwHighDateTime", DWORD))


class IO_COUNTERS(ctypes.Structure):
    _fields_ = (
        ("ReadOperationCount", ULONGLONG),
        ("WriteOperationCount", ULONGLONG),
        ("OtherOperationCount", ULONGLONG),
        ("ReadTransferCount", ULONGLONG),
        ("WriteTransferCount", ULONGLONG),
        ("OtherTransferCount", ULONGLONG),
    )


class JOBOBJECT_BASIC_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("PerProcessUserTimeLimit", LARGE_INTEGER),
        ("PerJobUserTimeLimit", LARGE_INTEGER),
        ("LimitFlags", DWORD),
        ("MinimumWorkingSetSize", SIZE_T),
        ("MaximumWorkingSetSize", SIZE_T),
        ("ActiveProcessLimit", DWORD),
        ("Affinity", ULONG_PTR),
        ("PriorityClass", DWORD),
        ("SchedulingClass", DWORD),
    )


class JOBOBJECT_EXTENDED_LIMIT_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("BasicLimitInformation", JOBOBJECT_BASIC_LIMIT_INFORMATION),
        ("IoInfo", IO_COUNTERS),
        ("ProcessMemoryLimit", SIZE_T),
        ("JobMemoryLimit", SIZE_T),
        ("PeakProcessMemoryUsed", SIZE_T),
        ("PeakJobMemoryUsed", SIZE_T),
    )


class JOBOBJECT_BASIC_PROCESS_ID_LIST(ctypes.Structure):
    # ProcessIdList is a variable-length array; C declares it with one element.
    _fields_ = (
        ("NumberOfAssignedProcesses", DWORD),
        ("NumberOfProcessIdsInList", DWORD),
        ("ProcessIdList", ULONG_PTR * 1),
    )


class STARTUPINFOW(ctypes.Structure):
    _fields_ = (
        ("cb", DWORD),
        ("lpReserved", POINTER_T),
        ("lpDesktop", POINTER_T),
        ("lpTitle", POINTER_T),
        ("dwX", DWORD),
        ("dwY", DWORD),
        ("dwXSize", DWORD),
        ("dwYSize", DWORD),
        ("dwXCountChars", DWORD),
        ("dwYCountChars", DWORD),
        ("dwFillAttribute", DWORD),
        ("dwFlags", DWORD),
        ("wShowWindow", WORD),
        ("cbReserved2", WORD),
        ("lpReserved2", POINTER_T),
        ("hStdInput", HANDLE),
        ("hStdOutput", HANDLE),
        ("hStdError", HANDLE),
    )


class PROCESS_INFORMATION(ctypes.Structure):
    _fields_ = (
        ("hProcess", HANDLE),
        ("hThread", HANDLE),
        ("dwProcessId", DWORD),
        ("dwThreadId", DWORD),
    )


ABI = AbiDeclarations(
    structs=(
        FILETIME,
        IO_COUNTERS,
        JOBOBJECT_BASIC_LIMIT_INFORMATION,
        JOBOBJECT_EXTENDED_LIMIT_INFORMATION,
        JOBOBJECT_BASIC_PROCESS_ID_LIST,
        STARTUPINFOW,
        PROCESS_INFORMATION,
    ),
    constants=CONSTANTS,
    headers=("windows.h",),
)


def job_limits(*, kill_on_close: bool) -> JOBOBJECT_EXTENDED_LIMIT_INFORMATION:
    """The limits every launch job gets: kill-on-close (or, to spare a protected
    member, nothing), and never a breakaway limit."""
    limits = JOBOBJECT_EXTENDED_LIMIT_INFORMATION()
    flags = CONSTANTS["JOB_OBJECT_LIMIT_KILL_ON_JOB_CLOSE"] if kill_on_close else 0
    limits.BasicLimitInformation.LimitFlags = flags
    return limits


def process_id_list_size(capacity: int) -> int:
    """Bytes of a JOBOBJECT_BASIC_PROCESS_ID_LIST with room for `capacity` pids."""
    offset = JOBOBJECT_BASIC_PROCESS_ID_LIST.ProcessIdList.offset
    return max(
        ctypes.sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST), offset + capacity * ctypes.sizeof(ULONG_PTR)
    )


def parse_process_id_list(raw: bytes) -> tuple[int, tuple[int, ...]]:
    """(processes assigned to the job, the pids that fit in the buffer)."""
    header = JOBOBJECT_BASIC_PROCESS_ID_LIST.from_buffer_copy(
        raw[: ctypes.sizeof(JOBOBJECT_BASIC_PROCESS_ID_LIST)]
    )
    offset = JOBOBJECT_BASIC_PROCESS_ID_LIST.ProcessIdList.offset
    fits = (len(raw) - offset) // ctypes.sizeof(ULONG_PTR)
    count = min(header.NumberOfProcessIdsInList, fits)
    pids = (ULONG_PTR * count).from_buffer_copy(raw, offset)
    return header.NumberOfAssignedProcesses, tuple(int(pid) for pid in pids)
