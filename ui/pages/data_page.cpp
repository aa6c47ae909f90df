// The Data page itself: its construction, the settings column (source and its options, split
// and loading, the transforms list and the selected transform's options), showing the
// document's DataSpec and committing edits of it. The preview is computed and scheduled in
// data_page_preview.cpp and shown by data_page_preview_panel.cpp.
#include "pages/data_page.h"

#include "document/project_document.h"
#include "pages/page_text.h"
#include "widgets/attr_editor.h"
#include "widgets/theme.h"
#include "widgets/wheel_guard.h"

#include <myelin/data/sampler.h>
#include <myelin/train/components.h>

#include <QCheckBox>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QListWidget>
#include <QMenu>
#include <QPushButton>
#include <QScrollArea>
#include <QSpinBox>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <tuple>

namespace myelin::ui {

namespace {

// The box layout that holds `widget` somewhere below `layout`.
QBoxLayout* boxHolding(QLayout* layout, QWidget* widget) {
    if (layout == nullptr) return nullptr;
    if (auto* box = qobject_cast<QBoxLayout*>(layout); box != nullptr && box->indexOf(widget) >= 0)
        return box;
    for (int i = 0; i < layout->count(); ++i)
        if (QBoxLayout* found = boxHolding(layout->itemAt(i)->layout(), widget)) return found;
    return nullptr;
}

QString transformLabel(const spec::Choice& choice, int index) {
    QString text =
        QStringLiteral("%1.  %2").arg(index + 1).arg(QString::fromStdString(choice.kind));
    const spec::ComponentKind* kind = spec::find_component(spec::transform_kinds(), choice.kind);
    if (kind == nullptr || kind->options.empty()) return text;
    QStringList parts;
    const graph::Attrs options = graph::with_defaults(kind->options, choice.options);
    for (const auto& [name, value] : options.items()) {
        const QString shown = attrValueText(value);
        parts << QStringLiteral("%1 %2").arg(QString::fromStdString(name),
                                             shown.isEmpty() ? QStringLiteral("auto") : shown);
    }
    return text + QStringLiteral("   (") + parts.join(QStringLiteral(", ")) + QLatin1Char(')');
}

} // namespace

DataPage::DataPage(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("dataPage"));
    installWheelGuard(); // the wheel scrolls this form; it edits an input only once focused
    setAttribute(Qt::WA_StyledBackground, true);

    auto* scroll = new QScrollArea(this);
    scroll->setObjectName(QStringLiteral("dataSettingsScroll"));
    scroll->setWidgetResizable(true);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff); // the form follows the width
    scroll->setFixedWidth(380);
    scroll->setWidget(buildSettings());
    auto* layout = new QHBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->setSpacing(0);
    layout->addWidget(scroll);
    layout->addWidget(buildPreview(), 1);

    debounce_ = new QTimer(this);
    debounce_->setSingleShot(true);
    debounce_->setInterval(300);
    connect(debounce_, &QTimer::timeout, this, &DataPage::startPreview);

    connect(document_, &ProjectDocument::dataSpecChanged, this, [this] {
        refresh();
        maybeSchedulePreview();
    });
    connect(document_, &ProjectDocument::projectReplaced, this, [this] {
        selectedTransform_ = document_->project().data.transforms.empty() ? -1 : 0;
        requested_.reset(); // a new project previews even when its spec equals the old one
        refresh();
        maybeSchedulePreview();
    });
    // The split is seeded with the training seed; relative paths follow the project file.
    connect(document_, &ProjectDocument::trainSpecChanged, this, &DataPage::maybeSchedulePreview);
    connect(document_, &ProjectDocument::filePathChanged, this, &DataPage::maybeSchedulePreview);
    selectedTransform_ = document_->project().data.transforms.empty() ? -1 : 0;
    refresh();
    maybeSchedulePreview();
}

std::pair<QLabel*, QWidget*> DataPage::addDocAndForm(const QString& docName) {
    auto* doc = new QLabel(settings_);
    doc->setObjectName(docName);
    doc->setWordWrap(true);
    settingsColumn_->addWidget(doc);
    auto* form = new QWidget(settings_);
    settingsColumn_->addWidget(form);
    return {doc, form};
}

QWidget* DataPage::buildSettings() {
    settings_ = new QWidget;
    settings_->setObjectName(QStringLiteral("dataSettings"));
    settingsColumn_ = new QVBoxLayout(settings_);
    settingsColumn_->setContentsMargins(14, 12, 14, 12);
    settingsColumn_->setSpacing(6);

    auto* title = new QLabel(tr("Data"), settings_);
    title->setObjectName(QStringLiteral("dataPageTitle"));
    settingsColumn_->addWidget(title);

    // Source.
    settingsColumn_->addWidget(sectionHeading(tr("Source"), settings_));
    source_ = new QComboBox(settings_);
    source_->setObjectName(QStringLiteral("dataSource"));
    for (const spec::ComponentKind& kind : spec::data_source_kinds()) {
        source_->addItem(QString::fromStdString(kind.name));
        source_->setItemData(source_->count() - 1, QString::fromStdString(kind.doc),
                             Qt::ToolTipRole);
    }
    connect(source_, &QComboBox::currentIndexChanged, this, &DataPage::commitSourceKind);
    settingsColumn_->addWidget(source_);
    std::tie(sourceDoc_, sourceForm_) = addDocAndForm(QStringLiteral("dataSourceDoc"));

    // Split and loading.
    settingsColumn_->addWidget(sectionHeading(tr("Split and loading"), settings_));
    auto* loader = new QFormLayout;
    loader->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    loader->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    loader->setHorizontalSpacing(12);
    loader->setVerticalSpacing(6);
    validation_ = new QDoubleSpinBox(settings_);
    validation_->setObjectName(QStringLiteral("dataValidationFraction"));
    validation_->setRange(0.0, 0.9);
    validation_->setDecimals(3);
    validation_->setSingleStep(0.05);
    validation_->setKeyboardTracking(false);
    validation_->setToolTip(tr("Share of the training examples held out for validation (a "
                               "seeded random split; 0: no validation)."));
    batchSize_ = new QSpinBox(settings_);
    batchSize_->setObjectName(QStringLiteral("dataBatchSize"));
    batchSize_->setRange(1, 1 << 20);
    batchSize_->setKeyboardTracking(false);
    batchSize_->setAccelerated(true);
    batchSize_->setToolTip(tr("Examples per mini-batch."));
    workers_ = new QSpinBox(settings_);
    workers_->setObjectName(QStringLiteral("dataWorkers"));
    workers_->setRange(0, 64);
    workers_->setKeyboardTracking(false);
    workers_->setToolTip(tr("Loader threads that read and transform batches ahead of the "
                            "training loop (0: load on the training thread)."));
    shuffle_ = new QCheckBox(tr("Reshuffle every epoch"), settings_);
    shuffle_->setObjectName(QStringLiteral("dataShuffle"));
    shuffle_->setToolTip(tr("Visit the training examples in a new random order each epoch."));
    dropLast_ = new QCheckBox(tr("Drop the last partial batch"), settings_);
    dropLast_->setObjectName(QStringLiteral("dataDropLast"));
    dropLast_->setToolTip(tr("Skip the final batch of an epoch when it has fewer examples than "
                             "the batch size."));
    for (QWidget* w : {static_cast<QWidget*>(validation_), static_cast<QWidget*>(batchSize_),
                       static_cast<QWidget*>(workers_)})
        w->setSizePolicy(QSizePolicy::Expanding, QSizePolicy::Fixed);
    loader->addRow(tr("Validation"), validation_);
    loader->addRow(tr("Batch size"), batchSize_);
    loader->addRow(tr("Workers"), workers_);
    loader->addRow(tr("Shuffle"), shuffle_);
    loader->addRow(tr("Drop last"), dropLast_);
    settingsColumn_->addLayout(loader);
    connect(validation_, &QDoubleSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(batchSize_, &QSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(workers_, &QSpinBox::valueChanged, this, &DataPage::commitLoader);
    connect(shuffle_, &QCheckBox::toggled, this, &DataPage::commitLoader);
    connect(dropLast_, &QCheckBox::toggled, this, &DataPage::commitLoader);

    // Transforms.
    settingsColumn_->addWidget(sectionHeading(tr("Transforms (in order)"), settings_));
    transforms_ = new QListWidget(settings_);
    transforms_->setObjectName(QStringLiteral("dataTransforms"));
    transforms_->setFixedHeight(118);
    transforms_->setToolTip(tr("Applied in this order to each training example on the loader "
                               "threads; random augmentation is for training only."));
    settingsColumn_->addWidget(transforms_);
    connect(transforms_, &QListWidget::currentRowChanged, this, [this](int row) {
        selectedTransform_ = row;
        rebuildTransformForm();
    });

    auto* buttons = new QHBoxLayout;
    buttons->setSpacing(4);
    addTransform_ = new QPushButton(tr("Add"), settings_);
    addTransform_->setObjectName(QStringLiteral("dataAddTransform"));
    addTransform_->setToolTip(tr("Append a transform."));
    auto* menu = new QMenu(addTransform_);
    menu->setObjectName(QStringLiteral("dataAddTransformMenu"));
    menu->setToolTipsVisible(true);
    for (const spec::ComponentKind& kind : spec::transform_kinds()) {
        const QString name = QString::fromStdString(kind.name);
        QAction* action = menu->addAction(name);
        action->setObjectName(QStringLiteral("addTransform_") + name);
        action->setToolTip(QString::fromStdString(kind.doc));
        connect(action, &QAction::triggered, this, [this, name] { addTransform(name); });
    }
    addTransform_->setMenu(menu);
    removeTransform_ = new QPushButton(tr("Remove"), settings_);
    removeTransform_->setObjectName(QStringLiteral("dataRemoveTransform"));
    moveUp_ = new QPushButton(tr("Up"), settings_);
    moveUp_->setObjectName(QStringLiteral("dataMoveTransformUp"));
    moveUp_->setToolTip(tr("Apply the selected transform earlier."));
    moveDown_ = new QPushButton(tr("Down"), settings_);
    moveDown_->setObjectName(QStringLiteral("dataMoveTransformDown"));
    moveDown_->setToolTip(tr("Apply the selected transform later."));
    connect(removeTransform_, &QPushButton::clicked, this, &DataPage::removeTransform);
    connect(moveUp_, &QPushButton::clicked, this, [this] { moveTransform(-1); });
    connect(moveDown_, &QPushButton::clicked, this, [this] { moveTransform(1); });
    buttons->addWidget(addTransform_);
    buttons->addWidget(removeTransform_);
    buttons->addStretch(1);
    buttons->addWidget(moveUp_);
    buttons->addWidget(moveDown_);
    settingsColumn_->addLayout(buttons);
    std::tie(transformDoc_, transformForm_) = addDocAndForm(QStringLiteral("dataTransformDoc"));
    settingsColumn_->addStretch(1);
    return settings_;
}

void DataPage::rebuildSourceForm() {
    // The old editors may be inside one of their own signals: delete them later.
    for (QObject* child : sourceForm_->findChildren<QObject*>())
        disconnect(child, nullptr, this, nullptr);
    sourceForm_->hide();
    sourceForm_->deleteLater();
    sourceRows_.clear();

    auto* box = new QWidget(settings_);
    auto* form = new QFormLayout(box);
    form->setContentsMargins(0, 2, 0, 2);
    form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
    form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
    form->setHorizontalSpacing(12);
    form->setVerticalSpacing(6);
    const spec::ComponentKind* kind =
        spec::find_component(spec::data_source_kinds(), shownSourceKind_);
    if (kind != nullptr) {
        sourceRows_.build(kind->options, form, box, this,
                          [this](const AttrRow& row, const graph::AttrValue& value) {
                              commitSourceOption(row, value);
                          });
        for (const auto& row : sourceRows_.rows()) {
            // Options that name a file or a folder (core says which) get a Browse button.
            const graph::AttrDesc::Path path = row->desc.path;
            QBoxLayout* line =
                path != graph::AttrDesc::Path::None ? boxHolding(form, row->editor) : nullptr;
            if (line == nullptr) continue;
            auto* browse = new QToolButton(box);
            const QString name = QString::fromStdString(row->desc.name);
            browse->setObjectName(QStringLiteral("browse_") + name);
            browse->setText(tr("Browse…"));
            const bool folder = path == graph::AttrDesc::Path::Folder;
            browse->setToolTip(folder ? tr("Choose the folder.") : tr("Choose the file."));
            line->addWidget(browse);
            connect(browse, &QToolButton::clicked, this,
                    [this, name, folder] { browseFor(name, folder); });
        }
    }
    const int at = settingsColumn_->indexOf(sourceDoc_) + 1;
    settingsColumn_->insertWidget(at, box);
    sourceForm_ = box;
}

void DataPage::rebuildTransformForm() {
    const auto& transforms = document_->project().data.transforms;
    const spec::Choice* selected =
        selectedTransform_ >= 0 && selectedTransform_ < int(transforms.size())
            ? &transforms[size_t(selectedTransform_)]
            : nullptr;
    const std::string kindName = selected != nullptr ? selected->kind : std::string();
    const spec::ComponentKind* kind = spec::find_component(spec::transform_kinds(), kindName);
    removeTransform_->setEnabled(selected != nullptr && document_->isOpen());
    moveUp_->setEnabled(selected != nullptr && selectedTransform_ > 0 && document_->isOpen());
    moveDown_->setEnabled(selected != nullptr && selectedTransform_ + 1 < int(transforms.size()) &&
                          document_->isOpen());
    transformDoc_->setText(kind != nullptr ? QString::fromStdString(kind->doc)
                           : selected != nullptr
                               ? tr("Unknown transform '%1'.").arg(QString::fromStdString(kindName))
                               : (transforms.empty()
                                      ? tr("No transforms: the examples are used as read.")
                                      : QString()));
    transformDoc_->setVisible(!transformDoc_->text().isEmpty());

    if (kindName != shownTransformKind_) {
        for (QObject* child : transformForm_->findChildren<QObject*>())
            disconnect(child, nullptr, this, nullptr);
        transformForm_->hide();
        transformForm_->deleteLater();
        transformRows_.clear();
        shownTransformKind_ = kindName;
        auto* box = new QWidget(settings_);
        auto* form = new QFormLayout(box);
        form->setContentsMargins(0, 2, 0, 2);
        form->setLabelAlignment(Qt::AlignLeft | Qt::AlignVCenter);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setHorizontalSpacing(12);
        form->setVerticalSpacing(6);
        if (kind != nullptr)
            transformRows_.build(kind->options, form, box, this,
                                 [this](const AttrRow& row, const graph::AttrValue& value) {
                                     commitTransformOption(row, value);
                                 });
        const int at = settingsColumn_->indexOf(transformDoc_) + 1;
        settingsColumn_->insertWidget(at, box);
        transformForm_ = box;
    }
    if (selected != nullptr) transformRows_.show(selected->options);
    transformRows_.setEnabled(document_->isOpen());
    transformForm_->setVisible(!transformRows_.empty());
}

void DataPage::refresh() {
    const bool open = document_->isOpen();
    const spec::DataSpec& spec = document_->project().data;
    settings_->setEnabled(open);
    refresh_->setEnabled(open);

    {
        const QSignalBlocker blocker(source_);
        const int index = source_->findText(QString::fromStdString(spec.source.kind));
        source_->setCurrentIndex(index);
    }
    const spec::ComponentKind* kind =
        spec::find_component(spec::data_source_kinds(), spec.source.kind);
    sourceDoc_->setText(
        kind != nullptr
            ? QString::fromStdString(kind->doc)
            : tr("Unknown data source '%1'.").arg(QString::fromStdString(spec.source.kind)));
    if (spec.source.kind != shownSourceKind_) {
        shownSourceKind_ = spec.source.kind;
        rebuildSourceForm();
    }
    sourceRows_.show(spec.source.options);
    // Paths read from their start; the whole of a long one is in the tooltip.
    for (const auto& row : sourceRows_.rows())
        if (auto* edit = qobject_cast<QLineEdit*>(row->editor);
            edit != nullptr && row->desc.path != graph::AttrDesc::Path::None) {
            edit->setCursorPosition(0);
            edit->setToolTip(
                QString::fromStdString(row->desc.doc) +
                (edit->text().isEmpty() ? QString() : QStringLiteral("\n") + edit->text()));
        }

    {
        const QSignalBlocker b1(validation_), b2(batchSize_), b3(workers_), b4(shuffle_),
            b5(dropLast_);
        validation_->setValue(spec.validation_fraction);
        batchSize_->setValue(int(std::clamp<int64_t>(spec.batch_size, 1, batchSize_->maximum())));
        workers_->setValue(spec.num_workers);
        shuffle_->setChecked(spec.shuffle);
        dropLast_->setChecked(spec.drop_last);
    }
    refreshTransformList();
    refreshLoaderFacts();
    if (!open) {
        debounce_->stop();
        ++generation_; // a preview still loading is of a project no longer open
        requested_.reset();
        waitingForShow_ = false;
        trainSize_ = 0;
        errorText_.clear();
        clearPreview(tr("Open or create a project to set up its data."));
        status_->clear();
    }
}

void DataPage::refreshTransformList() {
    const auto& transforms = document_->project().data.transforms;
    if (selectedTransform_ >= int(transforms.size()))
        selectedTransform_ = int(transforms.size()) - 1;
    if (selectedTransform_ < 0 && !transforms.empty()) selectedTransform_ = 0;
    {
        const QSignalBlocker blocker(transforms_);
        transforms_->clear();
        for (size_t i = 0; i < transforms.size(); ++i) {
            auto* item = new QListWidgetItem(transformLabel(transforms[i], int(i)), transforms_);
            const spec::ComponentKind* kind =
                spec::find_component(spec::transform_kinds(), transforms[i].kind);
            if (kind != nullptr) item->setToolTip(QString::fromStdString(kind->doc));
        }
        transforms_->setCurrentRow(selectedTransform_);
    }
    rebuildTransformForm();
}

void DataPage::refreshLoaderFacts() {
    const spec::DataSpec& spec = document_->project().data;
    if (!document_->isOpen() || trainSize_ <= 0 || !errorText_.isEmpty()) {
        loaderFacts_->clear();
        loaderFacts_->hide();
        return;
    }
    const int64_t batch = std::max<int64_t>(1, spec.batch_size);
    const int64_t batches = data::batch_count(trainSize_, batch, spec.drop_last);
    QStringList facts;
    facts << tr("%1 batches of %2 per epoch").arg(groupDigits(batches), groupDigits(batch));
    if (spec.drop_last && trainSize_ % batch != 0)
        facts << tr("%1 examples dropped each epoch").arg(groupDigits(trainSize_ % batch));
    facts << (spec.shuffle ? tr("reshuffled every epoch") : tr("fixed order"));
    facts << (spec.num_workers == 1  ? tr("1 loader thread")
              : spec.num_workers > 1 ? tr("%1 loader threads").arg(spec.num_workers)
                                     : tr("loaded on the training thread"));
    facts << tr("split seed %1 (Training page)").arg(document_->project().train.seed);
    loaderFacts_->setText(facts.join(QStringLiteral("  ·  ")));
    loaderFacts_->show();
}

void DataPage::apply(const spec::DataSpec& after, const QString& text, const QString& mergeKey) {
    document_->applyDataEdit(after, text, mergeKey);
}

void DataPage::commitSourceKind(int index) {
    const auto& kinds = spec::data_source_kinds();
    if (index < 0 || index >= int(kinds.size())) return;
    const spec::ComponentKind& kind = kinds[size_t(index)];
    spec::DataSpec spec = document_->project().data;
    if (spec.source.kind == kind.name) return;
    // Options of another source mean nothing here: start from the new kind's defaults.
    spec.source = spec::Choice{kind.name, graph::with_defaults(kind.options, {})};
    apply(spec, tr("Change data source to %1").arg(QString::fromStdString(kind.name)));
}

void DataPage::commitSourceOption(const AttrRow& row, const graph::AttrValue& value) {
    spec::DataSpec spec = document_->project().data;
    const graph::AttrValue* current = spec.source.options.find(row.desc.name);
    if (current != nullptr ? *current == value : value == row.desc.default_value) return;
    spec.source.options.set(row.desc.name, value);
    const QString name = QString::fromStdString(row.desc.name);
    apply(spec,
          tr("Change %1 of the %2 source to %3")
              .arg(name, QString::fromStdString(spec.source.kind), attrValueText(value)),
          QStringLiteral("data.source.") + name);
}

void DataPage::commitTransformOption(const AttrRow& row, const graph::AttrValue& value) {
    spec::DataSpec spec = document_->project().data;
    if (selectedTransform_ < 0 || selectedTransform_ >= int(spec.transforms.size())) return;
    spec::Choice& transform = spec.transforms[size_t(selectedTransform_)];
    const graph::AttrValue* current = transform.options.find(row.desc.name);
    if (current != nullptr ? *current == value : value == row.desc.default_value) return;
    transform.options.set(row.desc.name, value);
    const QString name = QString::fromStdString(row.desc.name);
    apply(spec,
          tr("Change %1 of %2 to %3")
              .arg(name, QString::fromStdString(transform.kind), attrValueText(value)),
          QStringLiteral("data.transform.%1.%2").arg(selectedTransform_).arg(name));
}

void DataPage::commitLoader() {
    spec::DataSpec spec = document_->project().data;
    if (validation_->value() != spec.validation_fraction) {
        spec.validation_fraction = validation_->value();
        apply(spec,
              tr("Change validation fraction to %1").arg(numberText(spec.validation_fraction)),
              QStringLiteral("data.validation_fraction"));
    } else if (batchSize_->value() != spec.batch_size) {
        spec.batch_size = batchSize_->value();
        apply(spec, tr("Change batch size to %1").arg(spec.batch_size),
              QStringLiteral("data.batch_size"));
    } else if (workers_->value() != spec.num_workers) {
        spec.num_workers = workers_->value();
        apply(spec, tr("Change loader threads to %1").arg(spec.num_workers),
              QStringLiteral("data.num_workers"));
    } else if (shuffle_->isChecked() != spec.shuffle) {
        spec.shuffle = shuffle_->isChecked();
        apply(spec, spec.shuffle ? tr("Turn shuffling on") : tr("Turn shuffling off"));
    } else if (dropLast_->isChecked() != spec.drop_last) {
        spec.drop_last = dropLast_->isChecked();
        apply(spec, spec.drop_last ? tr("Drop the last partial batch")
                                   : tr("Keep the last partial batch"));
    }
}

void DataPage::browseFor(const QString& option, bool folder) {
    const spec::DataSpec& spec = document_->project().data;
    const graph::AttrValue* value = spec.source.options.find(option.toStdString());
    const QString current = value != nullptr && std::holds_alternative<std::string>(*value)
                                ? QString::fromStdString(std::get<std::string>(*value))
                                : QString();
    const QDir base(document_->dataDirectory());
    const QString start = current.isEmpty() ? base.path() : base.absoluteFilePath(current);
    const QString chosen =
        folder ? QFileDialog::getExistingDirectory(this, tr("Choose %1").arg(option), start)
               : QFileDialog::getOpenFileName(this, tr("Choose %1").arg(option), start);
    if (chosen.isEmpty()) return;
    // Inside the project's folder the path is stored relative, so the project can move.
    QString stored = QFileInfo(chosen).absoluteFilePath();
    if (!document_->filePath().isEmpty()) {
        const QString relative = base.relativeFilePath(stored);
        if (!relative.startsWith(QStringLiteral(".."))) stored = relative;
    }
    if (const AttrRow* row = sourceRows_.find(option))
        commitSourceOption(*row, graph::AttrValue(stored.toStdString()));
}

void DataPage::addTransform(const QString& kindName) {
    const spec::ComponentKind* kind =
        spec::find_component(spec::transform_kinds(), kindName.toStdString());
    if (kind == nullptr || !document_->isOpen()) return;
    spec::DataSpec spec = document_->project().data;
    spec.transforms.push_back({kind->name, graph::with_defaults(kind->options, {})});
    selectedTransform_ = int(spec.transforms.size()) - 1;
    apply(spec, tr("Add transform %1").arg(kindName));
}

void DataPage::removeTransform() {
    spec::DataSpec spec = document_->project().data;
    if (selectedTransform_ < 0 || selectedTransform_ >= int(spec.transforms.size())) return;
    const QString kind = QString::fromStdString(spec.transforms[size_t(selectedTransform_)].kind);
    spec.transforms.erase(spec.transforms.begin() + selectedTransform_);
    selectedTransform_ = std::min(selectedTransform_, int(spec.transforms.size()) - 1);
    apply(spec, tr("Remove transform %1").arg(kind));
}

void DataPage::moveTransform(int delta) {
    spec::DataSpec spec = document_->project().data;
    const int from = selectedTransform_, to = selectedTransform_ + delta;
    if (from < 0 || to < 0 || from >= int(spec.transforms.size()) ||
        to >= int(spec.transforms.size()))
        return;
    std::swap(spec.transforms[size_t(from)], spec.transforms[size_t(to)]);
    const QString kind = QString::fromStdString(spec.transforms[size_t(to)].kind);
    selectedTransform_ = to;
    apply(spec, delta < 0 ? tr("Move transform %1 up").arg(kind)
                          : tr("Move transform %1 down").arg(kind));
}

} // namespace myelin::ui
