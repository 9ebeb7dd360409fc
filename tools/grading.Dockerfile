# The grading sandbox for a class you do not trust (README, "Teaching with this course").
#
# Build once, from the course folder (this checkout, solutions included: inside the image they are readable by root
# only, and the notebooks' code runs on a copy of the package without them):
#
#     docker build -f tools/grading.Dockerfile -t course-grader .
#
# Grade: no network, a read-only file system (Python and the course included), the submissions read-only, a scratch
# /tmp in memory where nothing can be executed, and only the capabilities the grader needs to run the notebooks'
# code as another user and to end its processes:
#
#     mkdir -p graded
#     docker run --rm --network none --read-only --tmpfs /tmp:rw,noexec,nosuid,nodev,size=8g \
#         --cap-drop ALL --cap-add CHOWN --cap-add DAC_OVERRIDE --cap-add FOWNER --cap-add KILL \
#         --cap-add SETUID --cap-add SETGID --security-opt no-new-privileges \
#         --pids-limit 4096 --memory 12g --cpus 4 \
#         -v "$PWD/submissions:/submissions:ro" -v "$PWD/graded:/graded" \
#         course-grader /submissions --out /graded/grades.csv --feedback /graded/feedback --jobs 2
#
# Inside, the grader runs as root and the notebooks' code as user 10000 (10000 + i with --jobs): that user owns
# nothing but the scratch folder of its own notebook in /tmp, so it cannot write /graded, read the solutions, change
# the course, reach the grader's processes or another submission's. The grader's own options (--cell-timeout,
# --notebook-timeout, --memory-gb, --jobs) follow the submissions folder; `docker run … course-grader --help` lists
# them. Written to be read, not run in the course's CI (no Docker there): the commands above are the ones the README
# gives.

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OMP_NUM_THREADS=1 \
    MKL_NUM_THREADS=1 \
    OPENBLAS_NUM_THREADS=1 \
    HOME=/tmp/home \
    MPLCONFIGDIR=/tmp/matplotlib \
    COURSE_UTILS_CACHE_DIR=/opt/course-cache

WORKDIR /course
COPY requirements.txt pyproject.toml README.md LICENSE ./
COPY course_utils ./course_utils
COPY notebooks ./notebooks

# CPU PyTorch first (the requirements pin the same version), then the course's pinned requirements (the course in
# editable mode, as in the README's quick start), byte-compiled while the file system is still writable.
RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu \
 && pip install -r requirements.txt \
 && python -m compileall -q /course/course_utils /usr/local/lib/python3.11

# The documentation corpus lessons 05–06 read, built once: each notebook gets its own copy of this cache.
RUN mkdir -p /opt/course-cache \
 && python -c "from course_utils.data.pydoc_corpus import load_pydoc_corpus; load_pydoc_corpus()" \
 && python -c "from course_utils.data.pydoc_sources import sentence_sources; sentence_sources()" \
 && chmod -R a+rX /opt/course-cache

# Everything readable by the notebooks' user (Python, the installed packages, the course), nothing writable; the
# answers (course_utils/classroom/withheld.py names them) readable by root only.
RUN chmod -R a+rX,go-w /course /usr/local \
 && python -c "from course_utils.classroom.withheld import lock_away; lock_away('/course')"

ENTRYPOINT ["python", "-m", "course_utils.classroom", "grade", "--as-user", "10000"]
CMD ["--help"]
