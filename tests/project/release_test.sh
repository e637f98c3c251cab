#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
# cmake/release.cmake on scratch projects: CMake refuses to configure when
# CHANGELOG.md has no entry for project(VERSION), a newer one, an entry that
# lists no change, or a date that does not exist; from a good
# changelog it writes a Debian changelog that dpkg-parsechangelog reads back
# entry by entry (version, date with its weekday, maintainer, every item,
# semicolons and all, lines within 80 columns), and AppStream releases that
# are well-formed XML with the text escaped.
# Usage: release_test.sh PROJECT_ROOT SCRATCH_DIR
set -euo pipefail
root=$1
scratch=$2
fail() { echo "FAIL: $*" >&2; exit 1; }

# project VERSION: a scratch project of that version that includes release.cmake
# and writes the releases' XML to releases.xml.
project() {
  rm -rf "$scratch" && mkdir -p "$scratch/cmake"
  cp "$root/cmake/release.cmake" "$root/cmake/commit.cmake" "$scratch/cmake/"
  cat >"$scratch/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(scratch VERSION $1 LANGUAGES NONE)
include(cmake/release.cmake)
file(WRITE \${CMAKE_BINARY_DIR}/releases.xml "<releases>\${BATCHSCOPE_RELEASES_XML}</releases>\n")
CMAKE
}
configure() { cmake -S "$scratch" -B "$scratch/b" "$@" >"$scratch/log" 2>&1; }

# refused VERSION PATTERN WHAT: configuring a project of VERSION with the
# changelog on stdin fails, and its message matches PATTERN.
refused() {
  project "$1"
  cat >"$scratch/CHANGELOG.md"
  if configure; then fail "configured with $3"; fi
  grep -q "$2" "$scratch/log" || fail "the refusal of $3 does not say '$2': $(cat "$scratch/log")"
  echo "ok: $3 refused"
}
printf '# Changelog\n\n## [Unreleased]\n\n## [1.1.0] - 2026-01-05\n\n### Added\n- old\n' |
  refused 1.2.0 'no entry "## \[1.2.0\]' "no entry for the version"
printf '# Changelog\n\n## [1.2.0] - 2026-02-01\n\n### Added\n- new\n\n## [1.1.0] - 2026-01-05\n\n- old\n' |
  refused 1.1.0 "newest release is 1.2.0" "a newer entry than the version"
printf '# Changelog\n\n## [1.1.0] - 2026-02-01\n\n### Added\n\n## [1.0.0] - 2026-01-05\n\n- old\n' |
  refused 1.1.0 "entry for 1.1.0 lists no change" "an entry that lists no change"
printf '# Changelog\n\n## [1.1.0] - 2026-02-30\n\n### Fixed\n- late\n' |
  refused 1.1.0 "the date 2026-02-30 is not a day of the calendar" "a day that does not exist"

project 2.0.0
cat >"$scratch/CHANGELOG.md" <<'MD'
# Changelog

Some prose that is not an entry.

## [Unreleased]

### Added
- Not released yet: must appear nowhere.

## [2.0.0] - 2024-02-29

### Added
- A first item; with a semicolon, `code`, a [link](https://example.org) and
  a continuation line, then <angle> & ampersand, long enough to be wrapped
  over more than one line of the Debian changelog for sure.
- Second.

### Fixed
- A fix.

## [1.0.0] - 2023-12-31

- The start, under no group.
MD
configure -DBATCHSCOPE_MAINTAINER="Ada Lovelace <ada@example.org>" || fail "configure: $(cat "$scratch/log")"
changelog=$scratch/b/share/doc/changelog
grep -q "Not released" "$changelog" "$scratch/b/releases.xml" && fail "an unreleased item was published"
awk 'length > 80 { bad = 1 } END { exit bad }' "$changelog" || fail "a line is longer than 80: $(cat "$changelog")"

field() { dpkg-parsechangelog -l "$changelog" "${@:2}" -S "$1"; }
[ "$(field Version)" = 2.0.0 ] || fail "version $(field Version)"
[ "$(field Date)" = "Thu, 29 Feb 2024 00:00:00 +0000" ] || fail "date $(field Date)"
[ "$(field Maintainer)" = "Ada Lovelace <ada@example.org>" ] || fail "maintainer $(field Maintainer)"
[ "$(field Version --offset 1 --count 1)" = 1.0.0 ] || fail "the second entry is $(field Version --offset 1 --count 1)"
field Changes --offset 1 --count 1 | grep -qF "* The start, under no group." ||
  fail "the group-less item: $(field Changes --offset 1 --count 1)"
[ "$(field Date --offset 1 --count 1)" = "Sun, 31 Dec 2023 00:00:00 +0000" ] ||
  fail "the second date is $(field Date --offset 1 --count 1)"
changes=$(field Changes | tr -s ' \n' '  ')
for want in "Added:" "* A first item; with a semicolon, code, a link and a continuation line, then <angle> & ampersand," \
            "* Second." "Fixed:" "* A fix."; do
  grep -qF -- "$want" <<<"$changes" || fail "the changes lack '$want': $changes"
done
# Every line parses: dpkg-parsechangelog warns on what it cannot read.
if dpkg-parsechangelog -l "$changelog" --all 2>&1 >/dev/null | grep -q .; then
  fail "dpkg-parsechangelog warns: $(dpkg-parsechangelog -l "$changelog" --all 2>&1 >/dev/null)"
fi
echo "ok: the Debian changelog"

xml=$scratch/b/releases.xml
xmllint --noout "$xml" || fail "the releases are not well-formed XML: $(cat "$xml")"
[ "$(xmllint --xpath 'count(//release)' "$xml")" = 2 ] || fail "not two releases: $(cat "$xml")"
[ "$(xmllint --xpath 'string(//release[1]/@version)' "$xml")" = 2.0.0 ] || fail "the newest release is not first"
[ "$(xmllint --xpath 'string(//release[1]/@date)' "$xml")" = 2024-02-29 ] || fail "the release date"
[ "$(xmllint --xpath 'count(//release[1]//li)' "$xml")" = 3 ] || fail "not three items in 2.0.0"
[ "$(xmllint --xpath 'count(//release[2]//ul/li)' "$xml")" = 1 ] || fail "the group-less item is not in a list: $(cat "$xml")"
xmllint --xpath 'string(//release[1]//li[1])' "$xml" | grep -qF "semicolon, code, a link and a continuation line, then <angle> & ampersand" ||
  fail "the first item reads: $(xmllint --xpath 'string(//release[1]//li[1])' "$xml")"
echo "ok: the AppStream releases"
