#include "widgets/attr_editor.h"

#include "widgets/theme.h"

#include <QCheckBox>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>
#include <climits>
#include <cmath>

namespace myelin::ui {

void setInvalid(QWidget* widget, bool invalid) {
    if (widget->property("invalid").toBool() == invalid) return;
    setStyleProperty(widget, "invalid", invalid);
}

QLabel* sectionHeading(const QString& text, QWidget* parent) {
    auto* label = new QLabel(text.toUpper(), parent);
    label->setProperty("class", QStringLiteral("sectionHeading"));
    return label;
}

void showFieldError(QLabel* label, QWidget* editor, const QString& text) {
    label->setText(text);
    label->setVisible(!text.isEmpty());
    if (editor != nullptr) setInvalid(editor, !text.isEmpty());
}

QString FloatSpinBox::textFromValue(double value) const {
    return QString::number(value, 'g', QLocale::FloatingPointShortest);
}

double FloatSpinBox::valueFromText(const QString& text) const {
    return text.trimmed().toDouble();
}

QValidator::State FloatSpinBox::validate(QString& text, int&) const {
    const QString t = text.trimmed();
    bool ok = false;
    const double v = t.toDouble(&ok);
    if (ok)
        return v >= minimum() && v <= maximum() ? QValidator::Acceptable : QValidator::Intermediate;
    static const QRegularExpression partial(
        QStringLiteral("^[-+]?[0-9]*\\.?[0-9]*([eE][-+]?[0-9]*)?$"));
    return partial.match(t).hasMatch() ? QValidator::Intermediate : QValidator::Invalid;
}

namespace {

QString intListText(const graph::AttrValue& value) {
    QStringList parts;
    if (const auto* list = std::get_if<std::vector<int64_t>>(&value))
        for (int64_t v : *list)
            parts << QString::number(v);
    return parts.join(QStringLiteral(", "));
}

// "3", "3, 5", "[3, 5]", "3 5".
std::optional<std::vector<int64_t>> parseIntList(const QString& text) {
    QString t = text.trimmed();
    if (t.startsWith(QLatin1Char('[')) && t.endsWith(QLatin1Char(']'))) t = t.mid(1, t.size() - 2);
    static const QRegularExpression separators(QStringLiteral("[,\\s]+"));
    const QStringList parts = t.split(separators, Qt::SkipEmptyParts);
    if (parts.isEmpty()) return std::nullopt;
    std::vector<int64_t> values;
    for (const QString& part : parts) {
        bool ok = false;
        const qlonglong v = part.toLongLong(&ok);
        if (!ok) return std::nullopt;
        values.push_back(v);
    }
    return values;
}

// "Coat: 2, Bag: 0.5" (by name) or "2, 0.5" (by position); empty for an empty table.
QString tableText(const graph::AttrValue& value) {
    QStringList parts;
    if (const auto* table = std::get_if<graph::NumberTable>(&value)) {
        for (const auto& [name, v] : table->by_name)
            parts << QString::fromStdString(name) + QStringLiteral(": ") +
                         QString::number(v, 'g', QLocale::FloatingPointShortest);
        for (double v : table->by_position)
            parts << QString::number(v, 'g', QLocale::FloatingPointShortest);
    }
    return parts.join(QStringLiteral(", "));
}

// The inverse of tableText; nullopt when a part is not "name: number" or a number, or the two
// forms are mixed.
std::optional<graph::NumberTable> parseTable(const QString& text) {
    graph::NumberTable table;
    QString t = text.trimmed();
    if (t.startsWith(QLatin1Char('[')) && t.endsWith(QLatin1Char(']'))) t = t.mid(1, t.size() - 2);
    for (const QString& raw : t.split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        const QString part = raw.trimmed();
        const qsizetype colon = part.lastIndexOf(QLatin1Char(':'));
        bool ok = false;
        const double v = (colon < 0 ? part : part.mid(colon + 1)).trimmed().toDouble(&ok);
        if (!ok) return std::nullopt;
        if (colon < 0)
            table.by_position.push_back(v);
        else
            table.by_name.emplace_back(part.left(colon).trimmed().toStdString(), v);
    }
    if (!table.by_name.empty() && !table.by_position.empty()) return std::nullopt;
    return table;
}

int intBound(std::optional<double> bound, bool exclusive, bool lower) {
    if (!bound) return lower ? INT_MIN : INT_MAX;
    double v = lower ? std::ceil(*bound) : std::floor(*bound);
    if (exclusive && v == *bound) v += lower ? 1 : -1;
    return int(std::clamp(v, double(INT_MIN), double(INT_MAX)));
}

} // namespace

QString attrValueText(const graph::AttrValue& value) {
    if (const auto* s = std::get_if<std::string>(&value)) return QString::fromStdString(*s);
    if (std::holds_alternative<std::vector<int64_t>>(value)) return intListText(value);
    if (std::holds_alternative<graph::NumberTable>(value)) return tableText(value);
    return QString::fromStdString(graph::format_value(value));
}

// Builds the editor for one attribute description.
std::unique_ptr<AttrRow> makeAttrRow(const graph::AttrDesc& desc, QWidget* parent) {
    auto row = std::make_unique<AttrRow>();
    row->desc = desc;
    switch (desc.type) {
    case graph::AttrType::Bool: {
        auto* box = new QCheckBox(parent);
        row->editor = box;
        row->show = [box](const graph::AttrValue& v) {
            if (const bool* b = std::get_if<bool>(&v)) box->setChecked(*b);
        };
        row->read = [box](QString&) -> std::optional<graph::AttrValue> { return box->isChecked(); };
        break;
    }
    case graph::AttrType::Int: {
        auto* spin = new QSpinBox(parent);
        spin->setKeyboardTracking(false);
        spin->setAccelerated(true);
        const int lo = intBound(desc.min, desc.min_exclusive, true);
        const int hi = intBound(desc.max, desc.max_exclusive, false);
        spin->setRange(lo, hi);
        row->editor = spin;
        row->show = [spin, lo, hi](const graph::AttrValue& v) {
            if (const int64_t* i = std::get_if<int64_t>(&v)) {
                // A file may hold a value outside the range; show it as it is (the problem is
                // reported on the node) rather than clamping it silently.
                const int shown = int(std::clamp<int64_t>(*i, INT_MIN, INT_MAX));
                spin->setRange(std::min(lo, shown), std::max(hi, shown));
                spin->setValue(shown);
            }
        };
        row->read = [spin](QString&) -> std::optional<graph::AttrValue> {
            return int64_t(spin->value());
        };
        break;
    }
    case graph::AttrType::Float: {
        auto* spin = new FloatSpinBox(parent);
        spin->setKeyboardTracking(false);
        spin->setDecimals(15);
        spin->setStepType(QAbstractSpinBox::AdaptiveDecimalStepType);
        spin->setRange(desc.min ? *desc.min : -1e12, desc.max ? *desc.max : 1e12);
        row->editor = spin;
        row->show = [spin](const graph::AttrValue& v) {
            if (const double* d = std::get_if<double>(&v)) spin->setValue(*d);
            if (const int64_t* i = std::get_if<int64_t>(&v)) spin->setValue(double(*i));
        };
        row->read = [spin](QString&) -> std::optional<graph::AttrValue> { return spin->value(); };
        break;
    }
    case graph::AttrType::Enum: {
        auto* combo = new QComboBox(parent);
        for (const std::string& choice : desc.choices)
            combo->addItem(QString::fromStdString(choice));
        row->editor = combo;
        row->show = [combo](const graph::AttrValue& v) {
            if (const auto* s = std::get_if<std::string>(&v))
                combo->setCurrentText(QString::fromStdString(*s));
        };
        row->read = [combo](QString&) -> std::optional<graph::AttrValue> {
            return combo->currentText().toStdString();
        };
        break;
    }
    case graph::AttrType::String: {
        auto* edit = new QLineEdit(parent);
        row->editor = edit;
        row->show = [edit](const graph::AttrValue& v) {
            if (const auto* s = std::get_if<std::string>(&v))
                edit->setText(QString::fromStdString(*s));
        };
        row->read = [edit](QString&) -> std::optional<graph::AttrValue> {
            return edit->text().toStdString();
        };
        break;
    }
    case graph::AttrType::IntList: {
        auto* edit = new QLineEdit(parent);
        edit->setPlaceholderText(desc.list_max_size == 2 ? QObject::tr("3  or  3, 5")
                                                         : QObject::tr("e.g. 1, 28, 28"));
        row->editor = edit;
        row->show = [edit](const graph::AttrValue& v) { edit->setText(intListText(v)); };
        row->read = [edit](QString& why) -> std::optional<graph::AttrValue> {
            auto values = parseIntList(edit->text());
            if (!values) {
                why = QObject::tr("expected integers separated by commas, like 3 or 3, 5");
                return std::nullopt;
            }
            return *values;
        };
        break;
    }
    case graph::AttrType::NumberTable: {
        auto* edit = new QLineEdit(parent);
        edit->setPlaceholderText(desc.table_by_position
                                     ? QObject::tr("Coat: 2, Bag: 0.5  or  2, 0.5")
                                     : QObject::tr("Coat: 2, Bag: 0.5"));
        row->editor = edit;
        row->show = [edit](const graph::AttrValue& v) { edit->setText(tableText(v)); };
        row->read = [edit](QString& why) -> std::optional<graph::AttrValue> {
            auto table = parseTable(edit->text());
            if (!table) {
                why = QObject::tr("expected name: number pairs separated by commas, like "
                                  "Coat: 2, Bag: 0.5 (or numbers alone, one per output)");
                return std::nullopt;
            }
            return *table;
        };
        break;
    }
    }
    row->editor->setObjectName(QStringLiteral("attr_") + QString::fromStdString(desc.name));
    row->editor->setToolTip(QString::fromStdString(desc.doc));
    row->editor->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    if (desc.nullable) {
        row->none = new QCheckBox(QObject::tr("None"), parent);
        row->none->setObjectName(QStringLiteral("attrNone_") + QString::fromStdString(desc.name));
        row->none->setToolTip(QObject::tr("No value (%1)").arg(QString::fromStdString(desc.doc)));
    }
    row->error = new QLabel(parent);
    row->error->setObjectName(QStringLiteral("attrError_") + QString::fromStdString(desc.name));
    row->error->setProperty("class", QStringLiteral("fieldError"));
    row->error->setWordWrap(true);
    row->error->hide();

    // A spin box never holds a value outside its range; say why a typed one is not taken, while
    // it is typed, instead of silently reverting it.
    if (auto* spin = qobject_cast<QAbstractSpinBox*>(row->editor)) {
        if (auto* line = spin->findChild<QLineEdit*>()) {
            AttrRow* target = row.get();
            QObject::connect(line, &QLineEdit::textEdited, spin, [target](const QString& text) {
                bool ok = false;
                graph::AttrValue value;
                if (target->desc.type == graph::AttrType::Int)
                    value = int64_t(text.trimmed().toLongLong(&ok));
                else
                    value = text.trimmed().toDouble(&ok);
                const QString why = ok ? QString::fromStdString(target->desc.check(value))
                                       : QObject::tr("expected a number");
                showFieldError(target->error, target->editor, why);
            });
            QObject::connect(spin, &QAbstractSpinBox::editingFinished, spin, [target] {
                showFieldError(target->error, target->editor, QString()); // back to a valid value
            });
        }
    }
    return row;
}

void AttrRows::build(const std::vector<graph::AttrDesc>& descs, QFormLayout* form, QWidget* parent,
                     QObject* context,
                     std::function<void(const AttrRow&, const graph::AttrValue&)> onCommit) {
    for (const graph::AttrDesc& desc : descs) {
        rows_.push_back(makeAttrRow(desc, parent));
        AttrRow* row = rows_.back().get();
        auto* field = new QVBoxLayout;
        field->setSpacing(2);
        auto* line = new QHBoxLayout;
        line->setSpacing(8);
        line->addWidget(row->editor, 1);
        if (row->none != nullptr) line->addWidget(row->none);
        field->addLayout(line);
        field->addWidget(row->error);
        auto* label = new QLabel(QString::fromStdString(desc.name), parent);
        label->setToolTip(QString::fromStdString(desc.doc));
        form->addRow(label, field);

        // The checked value, or the reason shown under the field.
        auto commit = [row, onCommit] {
            QString why;
            std::optional<graph::AttrValue> value;
            if (row->none != nullptr && row->none->isChecked())
                value = std::monostate{};
            else
                value = row->read(why);
            if (value && why.isEmpty()) why = QString::fromStdString(row->desc.check(*value));
            showFieldError(row->error, row->editor, why);
            if (value && why.isEmpty()) onCommit(*row, *value);
        };
        if (auto* box = qobject_cast<QCheckBox*>(row->editor))
            QObject::connect(box, &QCheckBox::toggled, context, commit);
        else if (auto* spin = qobject_cast<QSpinBox*>(row->editor))
            QObject::connect(spin, &QSpinBox::valueChanged, context, commit);
        else if (auto* dspin = qobject_cast<QDoubleSpinBox*>(row->editor))
            QObject::connect(dspin, &QDoubleSpinBox::valueChanged, context, commit);
        else if (auto* combo = qobject_cast<QComboBox*>(row->editor))
            QObject::connect(combo, &QComboBox::currentTextChanged, context, commit);
        else if (auto* edit = qobject_cast<QLineEdit*>(row->editor))
            QObject::connect(edit, &QLineEdit::editingFinished, context, commit);
        if (row->none != nullptr)
            QObject::connect(row->none, &QCheckBox::toggled, context, [row, commit](bool none) {
                row->editor->setEnabled(!none);
                commit();
            });
    }
}

void AttrRows::show(const graph::Attrs& attrs) {
    for (auto& row : rows_) {
        const graph::AttrValue* value = attrs.find(row->desc.name);
        const graph::AttrValue shown = value != nullptr ? *value : row->desc.default_value;
        const QSignalBlocker blocker(row->editor);
        const bool isNone = std::holds_alternative<std::monostate>(shown);
        if (row->none != nullptr) {
            const QSignalBlocker noneBlocker(row->none);
            row->none->setChecked(isNone);
            row->editor->setEnabled(!isNone);
        }
        if (!isNone) row->show(shown);
        showFieldError(row->error, row->editor, QString());
    }
}

void AttrRows::setEnabled(bool enabled) {
    for (auto& row : rows_) {
        row->editor->setEnabled(enabled && (row->none == nullptr || !row->none->isChecked()));
        if (row->none != nullptr) row->none->setEnabled(enabled);
    }
}

const AttrRow* AttrRows::find(const QString& name) const {
    for (const auto& row : rows_)
        if (QString::fromStdString(row->desc.name) == name) return row.get();
    return nullptr;
}

QWidget* AttrRows::editor(const QString& name) const {
    const AttrRow* row = find(name);
    return row != nullptr ? row->editor : nullptr;
}

QString AttrRows::error(const QString& name) const {
    const AttrRow* row = find(name);
    if (row == nullptr || row->error->isHidden()) return {};
    return row->error->text();
}

} // namespace myelin::ui
