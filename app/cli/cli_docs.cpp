// What is made from the command-line description (cli_spec.h): each command's --help, the man
// page myelin(1) and the bash completion, and the nearest name for a typo.
#include <myelin/version.h>

#include "cli_spec.h"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace myelin::cli {

namespace {

constexpr size_t kWidth = 100; // the help's lines, as the hand-written help had them

// --- the texts' markup (cli_spec.h) ---------------------------------------------------------

std::vector<std::string> split(const std::string& text, const std::string& separator) {
    std::vector<std::string> parts;
    size_t start = 0;
    for (size_t at; (at = text.find(separator, start)) != std::string::npos;
         start = at + separator.size())
        parts.push_back(text.substr(start, at - start));
    parts.push_back(text.substr(start));
    return parts;
}

struct Block {
    std::string title;                                      // empty: a paragraph
    std::vector<std::pair<std::string, std::string>> items; // a titled list's TAG, TEXT
    std::string text;                                       // a paragraph's
};

std::vector<Block> blocks(const std::string& footer) {
    std::vector<Block> out;
    for (const std::string& part : split(footer, "\n\n")) {
        if (part.empty()) continue;
        std::vector<std::string> lines = split(part, "\n");
        Block b;
        if (lines[0].size() > 1 && lines[0].back() == ':') {
            b.title = lines[0].substr(0, lines[0].size() - 1);
            for (size_t i = 1; i < lines.size(); ++i) {
                const size_t tab = lines[i].find('\t');
                b.items.emplace_back(lines[i].substr(0, tab),
                                     tab == std::string::npos ? "" : lines[i].substr(tab + 1));
            }
        } else {
            b.text = part;
        }
        out.push_back(std::move(b));
    }
    return out;
}

std::string summary(const CLI::App& app) {
    return app.get_description().substr(0, app.get_description().find('\n'));
}

// The description's paragraphs after the summary.
std::vector<std::string> details(const CLI::App& app) {
    const std::string& d = app.get_description();
    std::vector<std::string> out;
    if (d.find('\n') == std::string::npos) return out;
    for (const std::string& line : split(d.substr(d.find('\n') + 1), "\n"))
        if (!line.empty()) out.push_back(line);
    return out;
}

std::string sentence(std::string text) {
    if (!text.empty()) text[0] = char(std::toupper(static_cast<unsigned char>(text[0])));
    if (!text.empty() && text.back() != '.') text += '.';
    return text;
}

// Words filled into lines of at most `width` characters.
std::vector<std::string> wrap(const std::string& text, size_t width) {
    std::vector<std::string> lines(1);
    std::istringstream words(text);
    for (std::string word; words >> word;) {
        if (!lines.back().empty() && lines.back().size() + 1 + word.size() > width)
            lines.emplace_back();
        lines.back() += (lines.back().empty() ? "" : " ") + word;
    }
    return lines;
}

// "  LABEL   text" with the text wrapped in a column from `column` on.
std::string entry(const std::string& label, const std::string& text, size_t column) {
    std::string out = "  " + label;
    const std::vector<std::string> lines = wrap(text, kWidth - column);
    if (out.size() + 2 > column) {
        out += "\n";
        out += std::string(column, ' ');
    } else {
        out += std::string(column - out.size(), ' ');
    }
    for (size_t i = 0; i < lines.size(); ++i)
        out += (i ? "\n" + std::string(column, ' ') : "") + lines[i];
    return out + "\n";
}

// --- the description, read ------------------------------------------------------------------

bool visible(const CLI::Option* o) {
    return !o->get_group().empty();
}
bool takes_value(const CLI::Option* o) {
    return o->get_items_expected_max() > 0;
}

std::vector<const CLI::Option*> options_of(const CLI::App& app, bool positional) {
    std::vector<const CLI::Option*> out;
    for (const CLI::Option* o : app.get_options())
        if (visible(o) && o->get_positional() == positional && o != app.get_help_ptr())
            out.push_back(o);
    if (!positional && app.get_help_ptr()) out.push_back(app.get_help_ptr()); // help last
    return out;
}

std::vector<const CLI::App*> commands_of(const CLI::App& app) {
    return app.get_subcommands([](const CLI::App*) { return true; });
}

std::string names(const CLI::Option* o, const std::string& separator) {
    std::string out;
    for (const auto& n : o->get_snames())
        out += (out.empty() ? "" : separator) + "-" + n;
    for (const auto& n : o->get_lnames())
        out += (out.empty() ? "" : separator) + "--" + n;
    return out;
}

std::string first_name(const CLI::Option* o) {
    return o->get_snames().empty() ? "--" + o->get_lnames().front() : "-" + o->get_snames()[0];
}

std::string option_label(const CLI::Option* o) {
    if (o->get_positional()) return o->get_name(true);
    return names(o, ", ") + (takes_value(o) ? " " + o->get_type_name() : "");
}

std::string argument_usage(const CLI::Option* o) {
    const std::string name = o->get_name(true);
    const std::string many = o->get_expected_max() > 1 ? "..." : "";
    return o->get_required() ? name + many : "[" + name + many + "]";
}

// "train PROJECT [options]", "export [PROJECT] --checkpoint FILE ...": the command's path below
// myelin, its arguments, its required options, and [options] when it has others.
std::string synopsis(const CLI::App& app) {
    std::string out = command_path(app).substr(7);
    for (const CLI::Option* o : options_of(app, true))
        out += " " + argument_usage(o);
    bool optional = false;
    for (const CLI::Option* o : options_of(app, false)) {
        if (o == app.get_help_ptr()) continue;
        if (o->get_required())
            out += " " + first_name(o) + " " + o->get_type_name();
        else
            optional = true;
    }
    return optional ? out + " [options]" : out;
}

// The commands under `app`, a group's (runs) each action in its place.
std::vector<const CLI::App*> leaf_commands(const CLI::App& app) {
    std::vector<const CLI::App*> out;
    for (const CLI::App* c : commands_of(app)) {
        const auto below = leaf_commands(*c);
        if (below.empty())
            out.push_back(c);
        else
            out.insert(out.end(), below.begin(), below.end());
    }
    return out;
}

std::string footer_text(const std::string& footer) {
    std::string out;
    for (const Block& b : blocks(footer)) {
        out += "\n";
        if (b.title.empty()) {
            for (const std::string& line : wrap(b.text, kWidth))
                out += line + "\n";
            continue;
        }
        size_t column = 0;
        for (const auto& [tag, text] : b.items)
            column = std::max(column, tag.size() + 4);
        out += b.title + ":\n";
        for (const auto& [tag, text] : b.items)
            out += entry(tag, text, std::min<size_t>(column, 24));
    }
    return out;
}

class HelpFormatter final : public CLI::FormatterBase {
  public:
    std::string make_help(const CLI::App* app, std::string, CLI::AppFormatMode) const override {
        const bool group = !commands_of(*app).empty();
        std::string out = "Usage: ";
        if (app->get_parent() == nullptr)
            out += "myelin COMMAND [options] [arguments]\n";
        else if (group)
            out += command_path(*app) + " ACTION [options] [arguments]\n";
        else
            out += "myelin " + synopsis(*app) + "\n";
        out += "\n";
        for (const std::string& line : wrap(sentence(summary(*app)), kWidth))
            out += line + "\n";
        for (const std::string& paragraph : details(*app))
            for (const std::string& line : wrap(paragraph, kWidth))
                out += line + "\n";
        if (group) {
            out += "\n" + std::string(app->get_parent() ? "Actions" : "Commands") + ":\n";
            for (const CLI::App* c : leaf_commands(*app))
                out += entry(synopsis(*c), summary(*c), 36);
        }
        if (const auto arguments = options_of(*app, true); !arguments.empty()) {
            out += "\nArguments:\n";
            for (const CLI::Option* o : arguments)
                out += entry(option_label(o), o->get_description(), 30);
        }
        out += "\nOptions:\n";
        for (const CLI::Option* o : options_of(*app, false))
            out += entry(option_label(o),
                         o->get_description() + (o->get_required() ? " (required)" : ""),
                         group ? 36 : 30); // in the commands' column where they are listed
        return out + footer_text(app->get_footer());
    }
};

// --- the man page -----------------------------------------------------------------------------

// Text for roff: backslashes and minus signs escaped (a '-' alone prints a hyphen, which
// breaks a copied option), no line starting with a control character.
std::string roff(const std::string& text) {
    std::string out;
    for (char c : text) {
        if (c == '\\')
            out += "\\e";
        else if (c == '-')
            out += "\\-";
        else
            out += c;
    }
    if (!out.empty() && (out[0] == '.' || out[0] == '\'')) out = "\\&" + out;
    return out;
}

std::string man_option(const CLI::Option* o) {
    std::string tag = o->get_positional() ? "\\fI" + roff(o->get_name(true)) + "\\fR"
                                          : "\\fB" + roff(names(o, ", ")) + "\\fR";
    if (!o->get_positional() && takes_value(o)) tag += " \\fI" + roff(o->get_type_name()) + "\\fR";
    return ".TP\n" + tag + "\n" + roff(o->get_description()) + "\n";
}

std::string man_blocks(const std::vector<Block>& list, std::string& notes) {
    std::string out;
    for (const Block& b : list) {
        if (b.title.empty()) {
            notes += (notes.empty() ? "" : ".PP\n") + roff(b.text) + "\n";
            continue;
        }
        std::string title = b.title == "Exit codes" ? "EXIT STATUS" : b.title;
        std::transform(title.begin(), title.end(), title.begin(),
                       [](unsigned char c) { return char(std::toupper(c)); });
        out += ".SH \"" + title + "\"\n";
        for (const auto& [tag, text] : b.items)
            out += ".TP\n.B " + roff(tag) + "\n" + roff(text) + "\n";
    }
    return out;
}

// --- the bash completion ----------------------------------------------------------------------

// What a value or an argument is, from its metavariable: files, folders, projects, run ids, or
// the words it may be (cpu|cuda[:N]: cpu, cuda); nothing for numbers and names.
std::vector<std::string> value_kinds(const std::string& metavar) {
    std::vector<std::string> kinds;
    std::string words;
    for (std::string alternative : split(metavar, "|")) {
        alternative = alternative.substr(0, alternative.find('['));
        if (alternative.empty()) continue;
        const bool lower = std::none_of(alternative.begin(), alternative.end(),
                                        [](unsigned char c) { return std::isupper(c); });
        if (alternative.find('.') != std::string::npos || alternative == "FILE" ||
            alternative == "CSV" || alternative == "OUT" || alternative == "CHECKPOINT")
            kinds.push_back("files");
        else if (alternative == "DIR")
            kinds.push_back("dirs");
        else if (alternative == "PROJECT")
            kinds.push_back("projects");
        else if (alternative == "RUN")
            kinds.push_back("runs");
        else if (lower)
            words += (words.empty() ? "" : " ") + alternative;
    }
    if (!words.empty()) kinds.push_back("'=" + words + "'");
    return kinds;
}

std::string join(const std::vector<std::string>& items, const std::string& separator) {
    std::string out;
    for (const auto& item : items)
        out += (out.empty() ? "" : separator) + item;
    return out;
}

// "runs list": the key of a command in the script's case patterns ("" for myelin itself).
std::string key(const CLI::App& app) {
    const std::string path = command_path(app);
    return path == "myelin" ? "" : path.substr(7);
}

void all_commands(const CLI::App& app, std::vector<const CLI::App*>& out) {
    out.push_back(&app);
    for (const CLI::App* c : commands_of(app))
        all_commands(*c, out);
}

const char* const kCompletionHelpers = R"bash(
# The run ids of the store the command line names (else the default store).
_myelin_ids() {
    local i store=()
    for ((i = 1; i < ${#COMP_WORDS[@]}; i++)); do
        if [[ ${COMP_WORDS[i]} == --store ]]; then
            if [[ ${COMP_WORDS[i + 1]} == = ]]; then
                store=(--store "${COMP_WORDS[i + 2]}")
            else
                store=(--store "${COMP_WORDS[i + 1]}")
            fi
        elif [[ ${COMP_WORDS[i]} == --store=* ]]; then
            store=(--store "${COMP_WORDS[i]#--store=}")
        fi
    done
    "${COMP_WORDS[0]}" runs list --ids-only "${store[@]}" 2>/dev/null
}

# Adds to COMPREPLY what each kind names: files, dirs, projects (*.myelin), runs, =WORDS.
_myelin_add() {
    local kind IFS=$'\n'
    for kind; do
        case $kind in
        files) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -f -- "$cur")) ;;
        dirs) compopt -o filenames 2>/dev/null; COMPREPLY+=($(compgen -d -- "$cur")) ;;
        projects)
            compopt -o filenames 2>/dev/null
            COMPREPLY+=($(compgen -d -- "$cur") $(compgen -f -X '!*.myelin' -- "$cur")) ;;
        runs) COMPREPLY+=($(compgen -W "$(_myelin_ids)" -- "$cur")) ;;
        =*)
            IFS=$' \t\n'
            COMPREPLY+=($(compgen -W "${kind#=}" -- "$cur"))
            IFS=$'\n' ;;
        esac
    done
}
)bash";

} // namespace

std::shared_ptr<CLI::FormatterBase> help_formatter() {
    return std::make_shared<HelpFormatter>();
}

std::string command_path(const CLI::App& app) {
    std::string path = app.get_name();
    for (const CLI::App* a = app.get_parent(); a; a = a->get_parent())
        path = a->get_name() + " " + path;
    return path;
}

std::string man_page(const CLI::App& root) {
    std::string out = ".TH MYELIN 1 \"\" \"myelin " + std::string(version()) +
                      "\" \"User Commands\"\n"
                      ".SH NAME\nmyelin \\- " +
                      roff(summary(root)) +
                      "\n.SH SYNOPSIS\n"
                      ".B myelin\n\\fICOMMAND\\fR [\\fIoptions\\fR] [\\fIarguments\\fR]\n.br\n"
                      ".B myelin\n[\\fICOMMAND\\fR] \\fB\\-\\-help\\fR\n.br\n"
                      ".B myelin \\-\\-version\n"
                      ".SH DESCRIPTION\n";
    for (const std::string& paragraph : details(root))
        out += roff(paragraph) + "\n";
    out += ".SH COMMANDS\n";
    const std::vector<Block> root_blocks = blocks(root.get_footer());
    std::string notes;
    for (const CLI::App* c : leaf_commands(root)) {
        out += ".SS \"" + roff(synopsis(*c)) + "\"\n" + roff(sentence(summary(*c))) + "\n";
        for (const std::string& paragraph : details(*c))
            out += ".PP\n" + roff(paragraph) + "\n";
        for (const CLI::Option* o : options_of(*c, true))
            out += man_option(o);
        for (const CLI::Option* o : options_of(*c, false))
            if (o != c->get_help_ptr()) out += man_option(o);
        // What a command's footer says beyond the tool's (which has its own sections).
        for (const Block& b : blocks(c->get_footer()))
            if (b.title.empty() && std::none_of(root_blocks.begin(), root_blocks.end(),
                                                [&](const Block& r) { return r.text == b.text; }))
                out += ".PP\n" + roff(b.text) + "\n";
    }
    out += ".SH OPTIONS\n";
    for (const CLI::Option* o : options_of(root, false))
        out += man_option(o);
    out += ".PP\nEach command takes \\fB\\-h\\fR, \\fB\\-\\-help\\fR: its own usage. An option's "
           "value follows it as the next argument or after '=' (\\fB\\-\\-epochs=3\\fR); "
           "\\fB\\-\\-\\fR ends the options.\n";
    out += man_blocks(root_blocks, notes);
    if (!notes.empty()) out += ".SH NOTES\n" + notes;
    return out + ".SH SEE ALSO\n.BR myelin\\-studio (1)\n";
}

std::string bash_completion(const CLI::App& root) {
    std::vector<const CLI::App*> commands;
    all_commands(root, commands);
    std::vector<std::string> value_options, command_words;
    std::string value_cases, option_lists, argument_cases;
    for (const CLI::App* c : commands) {
        const std::string k = key(*c);
        std::vector<std::string> offered;
        for (const CLI::Option* o : c->get_options()) {
            std::vector<std::string> option_names;
            for (const auto& n : o->get_snames())
                option_names.push_back("-" + n);
            for (const auto& n : o->get_lnames())
                option_names.push_back("--" + n);
            if (visible(o)) offered.insert(offered.end(), option_names.begin(), option_names.end());
            if (o->get_positional() || !takes_value(o)) continue;
            std::vector<std::string> patterns;
            for (const auto& n : option_names)
                patterns.push_back("\"" + k + "/" + n + "\"");
            value_options.insert(value_options.end(), patterns.begin(), patterns.end());
            const auto kinds = value_kinds(o->get_type_name());
            value_cases += "        " + join(patterns, "|") + ")" +
                           (kinds.empty() ? "" : " _myelin_add " + join(kinds, " ") + ";") +
                           " return ;;\n";
        }
        std::vector<std::string> words;
        for (const CLI::App* sub : commands_of(*c)) {
            command_words.push_back("\"" + k + "/" + sub->get_name() + "\"");
            words.push_back(sub->get_name());
        }
        option_lists += "            \"" + k + "\") COMPREPLY=($(compgen -W \"" +
                        join(offered, " ") + "\" -- \"$cur\")) ;;\n";
        std::string arguments;
        const auto positional = options_of(*c, true);
        for (size_t i = 0; i < positional.size(); ++i) {
            const auto kinds = value_kinds(positional[i]->get_name(true));
            const bool last_many =
                i + 1 == positional.size() && positional[i]->get_expected_max() > 1;
            arguments += "            " + (last_many ? "*" : std::to_string(i)) + ")" +
                         (kinds.empty() ? "" : " _myelin_add " + join(kinds, " ")) + " ;;\n";
        }
        if (!words.empty())
            argument_cases += "        \"" + k + "\") COMPREPLY=($(compgen -W \"" +
                              join(words, " ") + "\" -- \"$cur\")) ;;\n";
        else if (!arguments.empty())
            argument_cases += "        \"" + k + "\")\n            case $npos in\n" + arguments +
                              "            esac ;;\n";
    }
    std::string out =
        "# bash completion for myelin                                -*- shell-script -*-\n"
        "# Generated from myelin's command-line description (myelin --generate-bash-completion)\n"
        "# when myelin is built: edit app/cli/cli_spec.cpp, not this file.\n";
    out += kCompletionHelpers;
    out += R"bash(
_myelin() {
    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
    local cmd="" word i skip=0 npos=0 rest=0
    COMPREPLY=()
    # "--store=FILE": bash splits the word at '='.
    if [[ $cur == = ]]; then
        cur=""
    elif [[ $prev == = ]]; then
        prev=${COMP_WORDS[COMP_CWORD - 2]}
    fi
    # The command so far and how many arguments it has, options and their values skipped.
    for ((i = 1; i < COMP_CWORD; i++)); do
        word=${COMP_WORDS[i]}
        if [[ $word == = ]]; then skip=1; continue; fi
        if ((skip)); then skip=0; continue; fi
        if ((!rest)) && [[ $word == -- ]]; then rest=1; continue; fi
        if ((!rest)) && [[ $word == -* ]]; then
            case "$cmd/$word" in
            )bash" +
           join(value_options, "|") +
           R"bash() skip=1 ;;
            esac
            continue
        fi
        case "$cmd/$word" in
        )bash" +
           join(command_words, "|") +
           R"bash() cmd=${cmd:+$cmd }$word; npos=0 ;;
        *) npos=$((npos + 1)) ;;
        esac
    done
    if ((!rest)); then
        case "$cmd/$prev" in
)bash" + value_cases +
           R"bash(        esac
        if [[ $cur == -* ]]; then
            case $cmd in
)bash" + option_lists +
           R"bash(            esac
            return
        fi
    fi
    case $cmd in
)bash" + argument_cases +
           R"bash(    esac
}
complete -F _myelin myelin
)bash";
    return out;
}

namespace {

// Optimal string alignment distance: insertions, deletions, substitutions, transpositions.
size_t distance(const std::string& a, const std::string& b) {
    std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
    for (size_t i = 0; i <= a.size(); ++i)
        d[i][0] = i;
    for (size_t j = 0; j <= b.size(); ++j)
        d[0][j] = j;
    for (size_t i = 1; i <= a.size(); ++i)
        for (size_t j = 1; j <= b.size(); ++j) {
            d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1,
                                d[i - 1][j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1)});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
        }
    return d[a.size()][b.size()];
}

} // namespace

std::optional<std::string> nearest(const std::string& typed,
                                   const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    size_t best_distance = std::max<size_t>(2, typed.size() / 4) + 1;
    for (const std::string& c : candidates) {
        size_t d = distance(typed, c);
        if (typed.size() >= 4 && c.rfind(typed, 0) == 0) d = std::min<size_t>(d, 1);
        if (d < best_distance) {
            best = c;
            best_distance = d;
        }
    }
    return best;
}

} // namespace myelin::cli
