#include "editor/node_inspector.h"

#include "document/model_edits.h"
#include "document/project_document.h"
#include "widgets/attr_editor.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSpinBox>
#include <QStyle>
#include <QVBoxLayout>

#include <climits>
#include <cmath>
#include <functional>
#include <optional>

namespace myelin::ui {

NodeInspector::NodeInspector(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("nodeInspector"));
    setAttribute(Qt::WA_StyledBackground, true);
    scroll_ = new QScrollArea(this);
    scroll_->setWidgetResizable(true);
    scroll_->setFrameShape(QFrame::NoFrame);
    scroll_->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // the form follows the width
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(scroll_);

    connect(document_, &ProjectDocument::modelChanged, this, [this](bool layoutOnly) {
        if (layoutOnly) return;
        if (node_ >= 0 && document_->spec().find(node_) == nullptr) {
            setSelection({});
            return;
        }
        refresh();
    });
    connect(document_, &ProjectDocument::projectReplaced, this, [this] { setSelection({}); });
    rebuild();
}

NodeInspector::~NodeInspector() = default;

void NodeInspector::setSelection(const std::vector<graph::NodeId>& ids) {
    const graph::NodeId id = ids.size() == 1 ? ids.front() : -1;
    const graph::Node* node = id >= 0 ? document_->spec().find(id) : nullptr;
    const std::string kind = node != nullptr ? node->kind : std::string();
    if (id == node_ && kind == shownKind_ && int(ids.size()) == selectionCount_) {
        refresh();
        return;
    }
    node_ = node != nullptr ? id : -1;
    shownKind_ = kind;
    selectionCount_ = int(ids.size());
    rebuild();
}

void NodeInspector::rebuild() {
    // The old editors may be inside one of their own signals: delete them later.
    if (QWidget* old = scroll_->takeWidget()) {
        for (QObject* child : old->findChildren<QObject*>())
            disconnect(child, nullptr, this, nullptr);
        old->hide();
        old->deleteLater();
    }
    rows_.clear();
    nameEdit_ = nullptr;
    nameError_ = nullptr;
    frozen_ = nullptr;
    lrMultiplier_ = nullptr;
    title_ = kindDoc_ = outputInfo_ = problems_ = emptyNote_ = nullptr;

    content_ = new QWidget;
    content_->setObjectName(QStringLiteral("inspectorContent"));
    auto* column = new QVBoxLayout(content_);
    column->setContentsMargins(14, 12, 14, 12);
    column->setSpacing(6);

    const graph::Node* node = node_ >= 0 ? document_->spec().find(node_) : nullptr;
    const graph::LayerKind* kind = node != nullptr ? graph::find_layer_kind(node->kind) : nullptr;
    if (node == nullptr || kind == nullptr) {
        emptyNote_ = new QLabel(content_);
        emptyNote_->setObjectName(QStringLiteral("inspectorEmpty"));
        emptyNote_->setAlignment(Qt::AlignHCenter | Qt::AlignTop);
        emptyNote_->setWordWrap(true);
        emptyNote_->setText(
            selectionCount_ > 1
                ? tr("%1 layers selected.\nSelect one to edit its attributes.").arg(selectionCount_)
                : tr("Select a layer on the canvas to edit its attributes."));
        column->addWidget(emptyNote_);
        column->addStretch(1);
        scroll_->setWidget(content_);
        return;
    }

    // Header: name and kind, documentation, output, problems.
    title_ = new QLabel(content_);
    title_->setObjectName(QStringLiteral("inspectorTitle"));
    title_->setTextFormat(Qt::RichText);
    title_->setWordWrap(true);
    kindDoc_ = new QLabel(QString::fromStdString(kind->doc), content_);
    kindDoc_->setObjectName(QStringLiteral("inspectorKindDoc"));
    kindDoc_->setWordWrap(true);
    outputInfo_ = new QLabel(content_);
    outputInfo_->setObjectName(QStringLiteral("inspectorOutput"));
    outputInfo_->setTextFormat(Qt::RichText);
    outputInfo_->setWordWrap(true);
    problems_ = new QLabel(content_);
    problems_->setObjectName(QStringLiteral("inspectorProblems"));
    problems_->setWordWrap(true);
    column->addWidget(title_);
    column->addWidget(kindDoc_);
    column->addWidget(outputInfo_);
    column->addWidget(problems_);

    // One form for every section, so labels and fields line up across them.
    auto* form = new QFormLayout;
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setHorizontalSpacing(12);
    form->setVerticalSpacing(6);
    column->addSpacing(4);
    column->addLayout(form);
    auto makeForm = [this, form](const QString& heading) {
        form->addRow(sectionHeading(heading, content_));
        return form;
    };

    // Name.
    QFormLayout* layer = makeForm(tr("Layer"));
    nameEdit_ = new QLineEdit(content_);
    nameEdit_->setObjectName(QStringLiteral("inspectorName"));
    nameEdit_->setToolTip(tr("The module name in the built model and in checkpoints: letters, "
                             "digits and '_'. Empty: the layer's position."));
    nameError_ = new QLabel(content_);
    nameError_->setProperty("class", QStringLiteral("fieldError"));
    nameError_->setObjectName(QStringLiteral("inspectorNameError"));
    nameError_->setWordWrap(true);
    nameError_->hide();
    auto* nameField = new QVBoxLayout;
    nameField->setSpacing(2);
    nameField->addWidget(nameEdit_);
    nameField->addWidget(nameError_);
    layer->addRow(tr("Name"), nameField);
    auto* kindLabel = new QLabel(QStringLiteral("%1  ·  %2")
                                     .arg(QString::fromStdString(kind->name),
                                          QString::fromLatin1(graph::to_string(kind->category))),
                                 content_);
    kindLabel->setObjectName(QStringLiteral("inspectorKind"));
    kindLabel->setWordWrap(true);
    layer->addRow(tr("Kind"), kindLabel);
    connect(nameEdit_, &QLineEdit::editingFinished, this, &NodeInspector::commitName);

    // Attributes, from the registry's descriptions.
    if (!kind->attrs.empty()) {
        QFormLayout* attrs = makeForm(tr("Attributes"));
        rows_.build(kind->attrs, attrs, content_, this,
                    [this](const AttrRow& row, const graph::AttrValue& value) {
                        commitAttribute(row, value);
                    });
    }

    // Training options of the node's parameters.
    QFormLayout* training = makeForm(tr("Training"));
    frozen_ = new QCheckBox(content_);
    frozen_->setObjectName(QStringLiteral("inspectorFrozen"));
    frozen_->setToolTip(tr("Keep this layer's parameters fixed while training (no gradient "
                           "updates)."));
    lrMultiplier_ = new FloatSpinBox(content_);
    lrMultiplier_->setObjectName(QStringLiteral("inspectorLrMultiplier"));
    lrMultiplier_->setKeyboardTracking(false);
    lrMultiplier_->setDecimals(6);
    lrMultiplier_->setRange(0, 1000);
    lrMultiplier_->setSingleStep(0.1);
    lrMultiplier_->setToolTip(tr("This layer's parameters train with the optimizer's learning "
                                 "rate times this factor (an optimizer parameter group)."));
    training->addRow(tr("Frozen"), frozen_);
    training->addRow(tr("LR multiplier"), lrMultiplier_);
    connect(frozen_, &QCheckBox::toggled, this, &NodeInspector::commitTraining);
    connect(lrMultiplier_, &QDoubleSpinBox::valueChanged, this, &NodeInspector::commitTraining);

    column->addStretch(1);
    scroll_->setWidget(content_);
    refresh();
}

void NodeInspector::refresh() {
    const graph::Node* node = node_ >= 0 ? document_->spec().find(node_) : nullptr;
    if (node == nullptr || title_ == nullptr) return;
    const graph::ModelSpec& spec = document_->spec();
    const graph::Analysis& analysis = document_->analysis();
    const graph::LayerKind* kind = graph::find_layer_kind(node->kind);

    const QColor color = kind != nullptr ? categoryColor(kind->category) : colors::kMutedText;
    title_->setText(QStringLiteral("<span style='color:%1'>●</span>&nbsp;%2 "
                                   "<span style='color:%4; font-weight:normal; "
                                   "font-size:10pt'>%3</span>")
                        .arg(color.name(), nodeLabel(spec, node->id).toHtmlEscaped(),
                             node->name.empty() ? QString() : QString::fromStdString(node->kind),
                             colors::kFaintText.name()));

    const graph::NodeInfo* info = nullptr;
    for (size_t i = 0; i < spec.nodes.size() && i < analysis.nodes.size(); ++i)
        if (spec.nodes[i].id == node->id) info = &analysis.nodes[i];
    QStringList facts;
    const std::vector<std::string> outputNames = graph::output_port_names(*node);
    if (info != nullptr && info->outputs.size() > 1) {
        // Every output port by name: "Outputs output [N, 8, 64], h_n [N, 64]".
        QStringList ports;
        for (size_t p = 0; p < info->outputs.size() && p < outputNames.size(); ++p)
            ports << tr("%1 <tt>%2</tt>")
                         .arg(QString::fromStdString(outputNames[p]).toHtmlEscaped(),
                              formatShape(info->outputs[p]).toHtmlEscaped());
        facts << tr("Outputs %1").arg(ports.join(QStringLiteral(", ")));
    } else if (info != nullptr && info->output) {
        facts << tr("Output <tt>%1</tt>").arg(formatShape(*info->output).toHtmlEscaped());
    }
    if (info != nullptr && info->params > 0)
        facts << tr("%1 parameters").arg(QString::fromStdString(graph::format_count(info->params)));
    if (info != nullptr && !info->module_name.empty() && node->name.empty())
        facts << tr("module <tt>%1</tt>").arg(QString::fromStdString(info->module_name));
    outputInfo_->setText(facts.join(QStringLiteral("  ·  ")));
    outputInfo_->setVisible(!facts.isEmpty());

    QStringList messages;
    for (const graph::Problem& p : analysis.problems)
        if (p.node == node->id)
            messages << (p.severity == graph::Severity::Warning ? tr("Warning: %1")
                                                                : QStringLiteral("%1"))
                            .arg((p.output_port >= 0
                                      ? tr("output %1: ")
                                            .arg(size_t(p.output_port) < outputNames.size()
                                                     ? QString::fromStdString(
                                                           outputNames[size_t(p.output_port)])
                                                     : QString::number(p.output_port))
                                      : QString()) +
                                 QString::fromStdString(p.message));
    problems_->setText(messages.join(QLatin1Char('\n')));
    problems_->setVisible(!messages.isEmpty());

    const QSignalBlocker nameBlocker(nameEdit_);
    nameEdit_->setText(QString::fromStdString(node->name));
    nameEdit_->setPlaceholderText(
        info != nullptr && !info->module_name.empty()
            ? tr("unnamed (module %1)").arg(QString::fromStdString(info->module_name))
            : tr("unnamed"));
    showFieldError(nameError_, nameEdit_, QString());

    rows_.show(node->attrs);

    const QSignalBlocker frozenBlocker(frozen_);
    frozen_->setChecked(node->frozen);
    const QSignalBlocker lrBlocker(lrMultiplier_);
    lrMultiplier_->setValue(node->lr_multiplier);
}

void NodeInspector::commitAttribute(const AttrRow& row, const graph::AttrValue& value) {
    const graph::Node* node = document_->spec().find(node_);
    if (node == nullptr) return;
    const graph::AttrValue* current = node->attrs.find(row.desc.name);
    if (current != nullptr && *current == value) return;
    graph::ModelSpec spec = document_->spec();
    spec.node(node_).attrs.set(row.desc.name, value);
    document_->applyEdit(spec, tr("Change %1 of %2 to %3")
                                   .arg(QString::fromStdString(row.desc.name),
                                        nodeLabel(spec, node_), attrValueText(value)));
}

void NodeInspector::commitName() {
    const graph::Node* node = document_->spec().find(node_);
    if (node == nullptr) return;
    const std::string name = nameEdit_->text().trimmed().toStdString();
    if (name == node->name) {
        showFieldError(nameError_, nameEdit_, QString());
        return;
    }
    if (!name.empty() && !graph::is_valid_node_name(name)) {
        showFieldError(nameError_, nameEdit_,
                       tr("Use letters, digits and '_', not starting with a digit."));
        return;
    }
    for (const graph::Node& other : document_->spec().nodes)
        if (!name.empty() && other.id != node_ && other.name == name) {
            showFieldError(nameError_, nameEdit_,
                           tr("Another layer (%1 #%2) already has this name.")
                               .arg(QString::fromStdString(other.kind))
                               .arg(other.id));
            return;
        }
    showFieldError(nameError_, nameEdit_, QString());
    graph::ModelSpec spec = document_->spec();
    const QString before = nodeLabel(spec, node_);
    spec.node(node_).name = name;
    document_->applyEdit(
        spec, name.empty() ? tr("Clear the name of %1").arg(before)
                           : tr("Rename %1 to %2").arg(before, QString::fromStdString(name)));
}

void NodeInspector::commitTraining() {
    const graph::Node* node = document_->spec().find(node_);
    if (node == nullptr) return;
    graph::ModelSpec spec = document_->spec();
    graph::Node& changed = spec.node(node_);
    const QString label = nodeLabel(spec, node_);
    if (frozen_->isChecked() != node->frozen) {
        changed.frozen = frozen_->isChecked();
        document_->applyEdit(spec, changed.frozen ? tr("Freeze %1").arg(label)
                                                  : tr("Unfreeze %1").arg(label));
        return;
    }
    if (lrMultiplier_->value() != node->lr_multiplier) {
        changed.lr_multiplier = lrMultiplier_->value();
        document_->applyEdit(
            spec, tr("Change lr multiplier of %1 to %2").arg(label).arg(changed.lr_multiplier));
    }
}

QWidget* NodeInspector::attributeEditor(const QString& name) const {
    return rows_.editor(name);
}

QString NodeInspector::attributeError(const QString& name) const {
    return rows_.error(name);
}

void NodeInspector::focusName() {
    if (nameEdit_ == nullptr) return;
    nameEdit_->setFocus(Qt::ShortcutFocusReason);
    nameEdit_->selectAll();
}

} // namespace myelin::ui
