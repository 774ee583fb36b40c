// The settings of the task, model, train and eval sections.
//
// Each section has a table of settings: name, the kind of value it takes, a
// one-line description (shown in errors and `posc help settings`) and a
// setter that checks the value's range and writes it into the plan. An
// unknown setting gets "did you mean"; a value of the wrong kind or out of
// range is reported at the value.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "compiler/diag/diagnostics.h"
#include "compiler/plan/plan.h"
#include "compiler/sema/value.h"

namespace posc::sema {

struct SettingsContext {
  plan::ExperimentPlan& plan;
  DiagnosticEngine& diags;
  // Names of all experiments in the program, for `init_from`.
  std::vector<std::string> experiments;
  // Where each applied setting was written ("model.width" -> its value), so
  // checks between settings can point at the right line.
  std::map<std::string, SourceRange> written = {};
};

// Sections that hold settings (attention is handled by sema/attention).
const std::vector<std::string>& settingSections();
// Names of the settings of one section.
std::vector<std::string> settingNames(const std::string& section);
// A setting's default, as the plan holds it before any section sets it
// ("5000", "cosine", "[0]"; "none" for an optional one left unset).
std::string settingDefault(const std::string& section, const std::string& name);
// One line per setting: "train.steps  int >= 0  5000  number of optimiser steps".
std::string describeSettings();

// Applies `section.name = value`. `name_range` locates the setting name.
// Returns false after reporting an error.
bool applySetting(const std::string& section, const std::string& name, SourceRange name_range,
                  const Value& value, SettingsContext& ctx);

// Checks that hold between settings (width divisible by heads, ...), after
// all sections, presets and overrides are applied. `at` locates the experiment.
void checkSettings(SourceRange at, SettingsContext& ctx);

// Checks between the model section and a hand-set model (f64, ReGLU, layer
// count), after the hand-set sections are built; fills in what they imply.
void checkHandsetSettings(SourceRange at, SettingsContext& ctx);

}  // namespace posc::sema
