"""The sandbox's allow-list as data: the bubblewrap command line and the environment for given paths (no kernels)."""

import os
import shutil
import subprocess
import sys

import pytest

from autograder.sandbox import SandboxError, environment, policy
from autograder.sandbox.kernel_manager import PACKAGE_DIR
from autograder.sandbox.limits import SandboxLimits

TOOLS = policy.Tools(bwrap="/usr/bin/bwrap", prlimit="/usr/bin/prlimit", setpriv="/usr/bin/setpriv")
tools = lambda m: policy.Tools(bwrap="/usr/bin/bwrap", prlimit=f"{m}/usr/bin/prlimit", setpriv=f"{m}/usr/bin/setpriv")
LIMITS = {"as": 4 * 2**30, "cpu": 600, "nproc": 64, "fsize": 0}
KERNEL = ["/venv/bin/python", "-m", "ipykernel_launcher", "-f", "/run/kernel.json"]


@pytest.fixture
def machine(tmp_path, monkeypatch):
    """A small machine in tmp_path: system folders (one a symlink, one missing), a venv made from a base
    Python, the package, names.txt in /srv, a course with two students, the grader's run folder."""
    m = tmp_path
    for folder in ("usr/bin", "usr/lib", "etc/fonts", "venv/bin", "base", "pkg", "srv/data", "run/connection"):
        (m / folder).mkdir(parents=True)
    (m / "lib").symlink_to("usr/lib")
    (m / "etc/ld.so.cache").write_text("")
    for tool in ("prlimit", "setpriv"):
        (m / "usr/bin" / tool).write_text("")
    (m / "srv/data/names.txt").write_text("emma\n")
    (m / "srv/lms-download").mkdir()
    for student in ("alice", "bob"):
        (m / "course/autograded" / student / "ps1").mkdir(parents=True)
    (m / "course/gradebook.db").write_text("")
    for name in ("passwd", "group"):
        (m / "run" / name).write_text("")
    system = (
        policy.Grant(str(m / "usr/bin"), "programs"),
        policy.Grant(str(m / "usr/lib"), "libraries"),
        policy.Grant(str(m / "lib"), "libraries, old name"),
        policy.Grant(str(m / "lib64"), "missing here"),
        policy.Grant(str(m / "etc/ld.so.cache"), "the linker's cache"),
    )
    monkeypatch.setattr(policy, "SYSTEM_FILES", system)
    return m


def paths(m, **changes):
    given = dict(
        student_folder=str(m / "course/autograded/alice/ps1"),
        course_root=str(m / "course"),
        connection_folder=str(m / "run/connection"),
        python_prefixes=(str(m / "venv"), str(m / "base")),
        package_dir=str(m / "pkg"),
        names_file=str(m / "srv/data/names.txt"),
        passwd=str(m / "run/passwd"),
        group=str(m / "run/group"),
    )
    return policy.KernelPaths(**{**given, **changes})


def test_the_command_line_grants_exactly_the_allow_list(machine):
    m = str(machine)  # under /tmp: its folders are made inside the kernel's private /tmp
    argv = policy.command_line(
        KERNEL, paths(machine), tools(machine), LIMITS, tmp_size=512, run_as=(61000, 61000), scratch_size=768
    )
    folders = lambda *names: [arg for name in names for arg in ("--perms", "0755", "--dir", name)]
    read_only = lambda path: ["--ro-bind", path, path]
    up_to_m = [str(p) for p in reversed(machine.parents) if str(p).startswith("/tmp/")] + [m]
    assert argv == [
        "/usr/bin/bwrap",
        *(
            "--unshare-pid",
            "--unshare-ipc",
            "--unshare-uts",
            "--unshare-net",
            "--die-with-parent",
            "--new-session",
        ),
        *("--hostname", "sandbox", "--proc", "/proc", "--dev", "/dev"),
        *(
            "--perms",
            "1777",
            "--size",
            "512",
            "--tmpfs",
            "/tmp",
            "--perms",
            "1777",
            "--size",
            str(2**20),
            "--tmpfs",
            "/sockets",  # where the kernel binds its sockets: the relay reaches them from outside
            "--perms",
            "1777",
            "--size",
            "768",
            "--tmpfs",
            "/scratch",  # the kernel's working folder: in memory, of its own size
            "--perms",
            "1777",
            "--size",
            "512",
            "--tmpfs",
            "/dev/shm",
        ),
        *folders("/etc"),
        *("--ro-bind", f"{m}/run/passwd", "/etc/passwd", "--ro-bind", f"{m}/run/group", "/etc/group"),
        *folders(*up_to_m),
        *("--symlink", "usr/lib", f"{m}/lib"),  # made again inside; lib64 is missing on this machine
        *read_only(f"{m}/venv"),
        *read_only(f"{m}/base"),
        *read_only(f"{m}/pkg"),
        *folders(f"{m}/usr"),
        *read_only(f"{m}/usr/bin"),  # prlimit and setpriv are in it
        *read_only(f"{m}/usr/lib"),
        *folders(f"{m}/etc"),
        *read_only(f"{m}/etc/ld.so.cache"),
        *folders(f"{m}/run"),
        *read_only(f"{m}/run/connection"),
        *folders(f"{m}/srv", f"{m}/srv/data"),
        *read_only(f"{m}/srv/data/names.txt"),  # names.txt alone: not srv/ with the LMS download
        *folders(f"{m}/course", f"{m}/course/autograded", f"{m}/course/autograded/alice"),  # empty: no bob
        *read_only(f"{m}/course/autograded/alice/ps1"),  # copied into the scratch, never written
        *("--remount-ro", "/", "--remount-ro", "/dev"),  # the kernel writes in no folder of bwrap's /dev
        *("--chdir", "/scratch", "--setenv", "JPY_PARENT_PID", "1"),
        *("--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID", "--cap-add", "CAP_SETPCAP"),
        *("--", f"{m}/usr/bin/setpriv", "--reuid=61000", "--regid=61000", "--clear-groups"),
        *("--inh-caps=-all", "--bounding-set=-all"),
        *("--", f"{m}/usr/bin/prlimit", "--core=0", f"--as={4 * 2**30}:{4 * 2**30}"),
        *("--cpu=600:unlimited", "--nproc=64:64"),  # the parent lifts its soft CPU limit, and sets each kernel's
        *("--", *KERNEL),
    ]


def test_only_memory_is_writable_and_all_that_comes_back_is_listed(machine):
    """What a kernel writes stays in the sandbox: no host folder is writable; what it writes is in memory (/tmp,
    /dev/shm, its sockets, its scratch) and ends with the sandbox. The rule as data: COMES_BACK."""
    staged = paths(machine, stage=str(machine / "run/stage"), student_folder=str(machine / "run/stage/student"))
    (machine / "run/stage/student").mkdir(parents=True)
    for k in (paths(machine), staged):
        argv = policy.command_line(KERNEL, k, TOOLS, LIMITS, tmp_size=512, run_as=(61000, 61000))
        assert not {"--bind", "--bind-try", "--dev-bind"} & set(argv)
        in_memory = [argv[i + 1] for i, arg in enumerate(argv) if arg == "--tmpfs"]
        assert sorted(in_memory) == ["/dev/shm", "/scratch", "/sockets", "/tmp"]
        assert argv[argv.index("--chdir") + 1] == "/scratch"
    assert list(policy.COMES_BACK) == [
        "the executed notebook",
        "its messages",
        "the end of its output",
        "what it left in its folder",
        "what did not fit in its folder",
    ]


def test_every_folder_exists_before_what_is_mounted_in_it(machine):
    argv = policy.command_line(KERNEL, paths(machine), TOOLS, LIMITS, tmp_size=512, run_as=(61000, 61000))
    made = {"/"}
    for i, arg in enumerate(argv[: argv.index("--remount-ro")]):
        if arg in ("--dir", "--tmpfs", "--proc", "--dev"):
            target = argv[i + 1]
        elif arg in ("--ro-bind", "--bind", "--symlink"):
            target = argv[i + 2]
        else:
            continue
        assert os.path.dirname(target) in made, target  # else bwrap makes it 0700: the kernel's uid could not pass
        made.add(target)


def test_without_root_the_kernel_gets_a_user_namespace(machine):
    tools = policy.Tools(bwrap="/usr/bin/bwrap", prlimit="/usr/bin/prlimit", choom="/usr/bin/choom")
    argv = policy.command_line(KERNEL, paths(machine), tools, LIMITS, tmp_size=512, run_as=None)
    tail = argv[argv.index("JPY_PARENT_PID") + 2 :]
    assert tail[:4] == ["--unshare-user", "--disable-userns", "--", "/usr/bin/prlimit"]
    assert tail[-len(KERNEL) - 4 :] == ["/usr/bin/choom", "-n", "1000", "--", *KERNEL]
    assert "/usr/bin/setpriv" not in argv and "--cap-drop" not in argv
    assert argv.index("--as-pid-1") < argv.index("--die-with-parent")  # the kernel parent is the sandbox's init


@pytest.mark.skipif(shutil.which("prlimit") is None, reason="prlimit (util-linux) is not installed")
def test_the_signals_a_kernel_may_queue_are_bounded(machine):
    """Linux counts queued signals per user of the machine, whatever the user namespace: an ordinary user's kernel
    queued all of the grading user's (96,367 here), whose own programs then got EAGAIN from sigqueue while it ran.
    The sandbox's prlimit gives its processes RLIMIT_SIGPENDING; here its part of the command line is run alone."""
    prlimit = shutil.which("prlimit")
    tools = policy.Tools(bwrap="/usr/bin/bwrap", prlimit=prlimit)
    show = [sys.executable, "-c", "import resource; print(*resource.getrlimit(resource.RLIMIT_SIGPENDING))"]
    limits = dict(SandboxLimits()._limits())
    argv = policy.command_line(show, paths(machine), tools, limits, tmp_size=512, run_as=None)
    ours = argv[argv.index("--core=0") - 1 :]  # prlimit's part (its path is granted before, too)
    shown = subprocess.run(ours, capture_output=True, text=True, check=True).stdout.split()
    assert shown == [str(limits["sigpending"])] * 2 and 0 < limits["sigpending"] <= 4096


def test_a_python_in_usr_gets_its_bin_and_lib_not_all_of_usr(machine):
    grants = policy.allow_list(paths(machine, python_prefixes=("/usr", "/usr/local", "/")), TOOLS)
    granted = {g.path for g in grants}
    assert {"/usr/bin", "/usr/lib", "/usr/local/bin", "/usr/local/lib", "/bin", "/lib"} <= granted
    assert not {"/usr", "/usr/local", "/", "/usr/share", "/usr/local/share"} & granted


def test_refuses_what_would_show_the_course(machine):
    refusals = {
        "the course root itself": paths(machine, student_folder=str(machine / "course")),
        "a folder outside the course": paths(machine, student_folder=str(machine / "srv/data")),
        "the whole machine as course": paths(machine, course_root="/"),
        "a venv that holds the course": paths(machine, python_prefixes=(str(machine),)),
        "names.txt's folder holding the course": paths(machine, names_file=str(machine)),
    }
    for case, given in refusals.items():
        with pytest.raises(SandboxError):
            policy.command_line(KERNEL, given, TOOLS, LIMITS, tmp_size=512, run_as=(61000, 61000))
            pytest.fail(case)
    with pytest.raises(SandboxError, match="must not be 0"):
        policy.command_line(KERNEL, paths(machine), TOOLS, LIMITS, tmp_size=512, run_as=(0, 0))


def test_a_worker_stage_is_bound_instead_of_a_student_folder_and_never_near_the_course(machine):
    stage = str(machine / "run/stage")
    (machine / "run/stage/student").mkdir(parents=True)
    staged = paths(machine, stage=stage, student_folder=f"{stage}/student")
    argv = policy.command_line(KERNEL, staged, TOOLS, LIMITS, tmp_size=512, run_as=(61000, 61000))
    assert ["--ro-bind", stage, stage] == argv[argv.index(stage) - 1 : argv.index(stage) + 2]
    assert "course" not in " ".join(argv) and argv[argv.index("--chdir") + 1] == "/scratch"
    refusals = {
        "a stage in the course": paths(
            machine, stage=str(machine / "course/s"), student_folder=str(machine / "course/s/student")
        ),
        "a stage holding the course": paths(machine, stage=str(machine), student_folder=str(machine / "student")),
        "a kernel folder off the stage": paths(machine, stage=stage, student_folder=str(machine / "elsewhere")),
    }
    for case, given in refusals.items():
        with pytest.raises(SandboxError, match="refusing the stage"):
            policy.command_line(KERNEL, given, TOOLS, LIMITS, tmp_size=512, run_as=(61000, 61000))
            pytest.fail(case)


def test_every_entry_says_why():
    grants = policy.allow_list(
        policy.KernelPaths(
            "/c/a/s/n", "/c", "/r/connection", (sys.prefix, "/usr"), PACKAGE_DIR, "/d/names.txt", "/p", "/g"
        ),
        TOOLS,
    )
    assert all(len(g.why) > 15 for g in grants) and len({g.path for g in grants}) > 15
    assert all(len(why) > 10 for why in environment.PASSED_VARIABLES.values())


def test_the_host_list_leaves_out_the_places_where_courses_and_downloads_lie():
    """On this machine: what the real allow-list binds, for the venv running the tests."""
    k = policy.KernelPaths(
        student_folder="/var/tmp/course/autograded/alice/backprop_ninja",
        course_root="/var/tmp/course",
        connection_folder="/tmp/nbgrader-sandbox-x/connection",
        python_prefixes=policy.python_prefixes(sys.executable),
        package_dir=PACKAGE_DIR,
        names_file="",
        passwd="/tmp/nbgrader-sandbox-x/passwd",
        group="/tmp/nbgrader-sandbox-x/group",
    )
    bound = [g for g in policy.resolve(policy.allow_list(k, TOOLS)) if g.mount == "read-only"]
    for g in bound:
        for place in ("/srv", "/opt", "/home", "/run", "/mnt", "/media", "/sys", "/var/tmp/course"):
            assert not (place + "/").startswith(g.path.rstrip("/") + "/"), (g.path, place)  # not it, nor above it
        assert g.path != "/etc" and g.path != os.path.expanduser("~")
    etc = {g.path for g in bound if g.path.startswith("/etc/")}
    assert etc <= {"/etc/ld.so.cache", "/etc/fonts", "/etc/passwd", "/etc/group"}


def test_the_environment_is_named_variables_only():
    grader = {
        "LANG": "C.UTF-8",
        "PATH": "/root/.local/bin:/usr/bin",
        "HOME": "/root",
        "NBGRADER_EXECUTION": "autograde",
        "BACKPROP_NINJA_SEED": "7",
        "BACKPROP_NINJA_NAMES": "/data/names.txt",
        "OMP_NUM_THREADS": "1",
        "PYTHONPATH": "/elsewhere",
        "JPY_API_TOKEN": "hub-token",
        "JUPYTERHUB_API_TOKEN": "hub-token-2",
        "JPY_SESSION_NAME": "/home/teacher/grading.ipynb",
        "GITHUB_TOKEN": "ghp",
        "AWS_SECRET_ACCESS_KEY": "aws",
        "PGPASSWORD": "pg",
        "SSH_AUTH_SOCK": "/run/ssh.sock",
    }
    assert environment.kernel_environment(grader, "/venv/bin/python", "/course/autograder") == {
        "LANG": "C.UTF-8",
        "NBGRADER_EXECUTION": "autograde",
        "BACKPROP_NINJA_SEED": "7",
        "BACKPROP_NINJA_NAMES": "/data/names.txt",
        "OMP_NUM_THREADS": "1",
        "HOME": "/tmp",
        "TMPDIR": "/tmp",
        "MPLCONFIGDIR": "/tmp/matplotlib",
        "PATH": "/venv/bin:/usr/bin:/bin",
        "PYTHONPATH": "/course",
    }


def test_no_passed_variable_can_carry_a_credential():
    from autograder.data import SEED_VARIABLE

    for name in environment.PASSED_VARIABLES:
        assert not any(word in name for word in ("TOKEN", "SECRET", "PASSWORD", "PASS", "KEY", "AUTH")), name
        assert not name.startswith(("JPY_", "JUPYTER")), name
    assert SEED_VARIABLE in environment.PASSED_VARIABLES


def test_account_files_name_the_kernels_user_only():
    passwd, group = policy.account_files(61003, 61004)
    assert passwd == "student:x:61003:61004:student:/tmp:/usr/sbin/nologin\n"
    assert group == "student:x:61004:\n"
