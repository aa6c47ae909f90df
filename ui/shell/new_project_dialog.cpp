#include "shell/new_project_dialog.h"

#include "widgets/theme.h"

#include <myelin/graph/analysis.h>
#include <myelin/io/project.h>

#include <QCoreApplication>
#include <QDialogButtonBox>
#include <QDir>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr int kPathRole = Qt::UserRole + 1;

QWidget* entryWidget(const QString& title, const QString& details, const QString& facts,
                     QWidget* parent) {
    auto* widget = new QWidget(parent);
    auto* layout = new QVBoxLayout(widget);
    layout->setContentsMargins(12, 8, 12, 8);
    layout->setSpacing(2);
    auto* name = new QLabel(title, widget);
    name->setProperty("class", QStringLiteral("exampleName"));
    auto* text = new QLabel(details, widget);
    text->setWordWrap(true);
    text->setProperty("class", QStringLiteral("exampleDetails"));
    layout->addWidget(name);
    layout->addWidget(text);
    if (!facts.isEmpty()) {
        auto* more = new QLabel(facts, widget);
        more->setProperty("class", QStringLiteral("exampleFacts"));
        layout->addWidget(more);
    }
    widget->setAttribute(Qt::WA_TransparentForMouseEvents);
    return widget;
}

} // namespace

QString exampleDirectory() {
    QStringList candidates;
    if (const QString dir = qEnvironmentVariable("MYELIN_EXAMPLES_DIR"); !dir.isEmpty())
        candidates << dir;
    const QDir app(QCoreApplication::applicationDirPath());
    candidates << app.filePath(QStringLiteral("../share/myelin/examples"))
               << app.filePath(QStringLiteral("../../resources/examples"))
               << app.filePath(QStringLiteral("../resources/examples"));
    if (const QString source = qEnvironmentVariable("MYELIN_SOURCE_DIR"); !source.isEmpty())
        candidates << QDir(source).filePath(QStringLiteral("resources/examples"));
    for (const QString& candidate : candidates) {
        const QDir dir(candidate);
        if (dir.exists() && !dir.entryList({QStringLiteral("*.myelin")}, QDir::Files).isEmpty())
            return dir.canonicalPath();
    }
    return {};
}

NewProjectDialog::NewProjectDialog(QWidget* parent) : QDialog(parent) {
    setObjectName(QStringLiteral("newProjectDialog"));
    setWindowTitle(tr("New Project"));
    resize(560, 480);

    auto* heading = new QLabel(tr("Start from an empty model or from an example."), this);
    heading->setObjectName(QStringLiteral("newProjectHeading"));

    list_ = new QListWidget(this);
    list_->setObjectName(QStringLiteral("exampleList"));
    list_->setSpacing(2);

    auto addEntry = [this](const QString& path, QWidget* widget) {
        auto* item = new QListWidgetItem(list_);
        item->setData(kPathRole, path);
        item->setSizeHint(widget->sizeHint() + QSize(0, 4));
        list_->setItemWidget(item, widget);
    };
    addEntry(QString(),
             entryWidget(tr("Empty model"), tr("A blank canvas: drag layers from the palette."),
                         QString(), list_));

    const QString folder = exampleDirectory();
    if (!folder.isEmpty()) {
        const QDir dir(folder);
        for (const QFileInfo& file :
             dir.entryInfoList({QStringLiteral("*.myelin")}, QDir::Files, QDir::Name)) {
            try {
                const io::Project project = io::load_project(file.absoluteFilePath().toStdString());
                const graph::Analysis analysis = graph::analyze(project.model);
                const QString facts =
                    tr("%1  ·  %2 layers  ·  %3 parameters")
                        .arg(file.fileName())
                        .arg(project.model.nodes.size())
                        .arg(QString::fromStdString(graph::format_count(analysis.total_params)));
                addEntry(file.absoluteFilePath(),
                         entryWidget(project.name.empty() ? file.completeBaseName()
                                                          : QString::fromStdString(project.name),
                                     QString::fromStdString(project.description), facts, list_));
            } catch (const Error&) {
                // A broken example is left out of the gallery; opening it directly explains why.
            }
        }
    }
    list_->setCurrentRow(0);
    connect(list_, &QListWidget::itemDoubleClicked, this, &QDialog::accept);

    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Ok | QDialogButtonBox::Cancel, this);
    buttons->button(QDialogButtonBox::Ok)->setText(tr("Create"));
    connect(buttons, &QDialogButtonBox::accepted, this, &QDialog::accept);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(16, 16, 16, 12);
    layout->setSpacing(10);
    layout->addWidget(heading);
    layout->addWidget(list_, 1);
    if (folder.isEmpty()) {
        auto* note = new QLabel(tr("The example projects were not found (set MYELIN_EXAMPLES_DIR "
                                   "to their folder)."),
                                this);
        note->setWordWrap(true);
        note->setObjectName(QStringLiteral("examplesMissing"));
        layout->addWidget(note);
    }
    layout->addWidget(buttons);
}

QString NewProjectDialog::selectedExample() const {
    const QListWidgetItem* item = list_->currentItem();
    return item != nullptr ? item->data(kPathRole).toString() : QString();
}

} // namespace myelin::ui
