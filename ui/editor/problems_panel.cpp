#include "editor/problems_panel.h"

#include "document/model_edits.h"
#include "document/project_document.h"
#include "widgets/theme.h"

#include <myelin/graph/analysis.h>

#include <QHeaderView>
#include <QLabel>
#include <QPainter>
#include <QStackedWidget>
#include <QTreeWidget>
#include <QVBoxLayout>

namespace myelin::ui {

namespace {

constexpr int kNodeRole = Qt::UserRole + 1;

QIcon severityIcon(graph::Severity severity) {
    QPixmap pixmap(32, 32);
    pixmap.setDevicePixelRatio(2);
    pixmap.fill(Qt::transparent);
    QPainter painter(&pixmap);
    painter.setRenderHint(QPainter::Antialiasing);
    painter.setPen(Qt::NoPen);
    QFont font;
    font.setPixelSize(11);
    font.setBold(true);
    painter.setFont(font);
    if (severity == graph::Severity::Error) {
        painter.setBrush(colors::kError);
        painter.drawEllipse(QRectF(1, 1, 14, 14));
    } else {
        painter.setBrush(colors::kWarning);
        painter.drawPolygon(QPolygonF({QPointF(8, 1), QPointF(15.5, 15), QPointF(0.5, 15)}));
    }
    painter.setPen(colors::kTextOnColor);
    painter.drawText(QRectF(0, severity == graph::Severity::Error ? 1 : 3, 16, 14), Qt::AlignCenter,
                     QStringLiteral("!"));
    return QIcon(pixmap);
}

} // namespace

ProblemsPanel::ProblemsPanel(ProjectDocument* document, QWidget* parent)
    : QWidget(parent), document_(document) {
    setObjectName(QStringLiteral("problemsPanel"));
    list_ = new QTreeWidget(this);
    list_->setObjectName(QStringLiteral("problemsList"));
    list_->setColumnCount(2);
    list_->setHeaderLabels({tr("Layer"), tr("Problem")});
    list_->setRootIsDecorated(false);
    list_->setUniformRowHeights(true);
    list_->setAlternatingRowColors(true);
    list_->setFrameShape(QFrame::NoFrame);
    list_->header()->setStretchLastSection(true);
    list_->header()->resizeSection(0, 200);
    list_->setIconSize(QSize(16, 16));
    auto activate = [this](QTreeWidgetItem* item) {
        const graph::NodeId id = item->data(0, kNodeRole).toLongLong();
        if (id >= 0) emit nodeActivated(id);
    };
    connect(list_, &QTreeWidget::itemClicked, this, activate);
    connect(list_, &QTreeWidget::itemActivated, this, activate);

    allClear_ = new QLabel(tr("No problems: every layer is connected and every shape fits."), this);
    allClear_->setObjectName(QStringLiteral("problemsAllClear"));
    allClear_->setAlignment(Qt::AlignCenter);

    stack_ = new QStackedWidget(this);
    stack_->addWidget(list_);
    stack_->addWidget(allClear_);
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    layout->addWidget(stack_);

    connect(document_, &ProjectDocument::modelChanged, this, [this](bool layoutOnly) {
        if (!layoutOnly) refresh();
    });
    refresh();
}

void ProblemsPanel::refresh() {
    const graph::ModelSpec& spec = document_->spec();
    const graph::Analysis& analysis = document_->analysis();
    list_->clear();
    errors_ = warnings_ = 0;
    if (document_->isOpen()) {
        // Errors first, then warnings; each group in the analysis's order.
        for (graph::Severity severity : {graph::Severity::Error, graph::Severity::Warning}) {
            for (const graph::Problem& p : analysis.problems) {
                if (p.severity != severity) continue;
                (severity == graph::Severity::Error ? errors_ : warnings_) += 1;
                QString layer = p.node >= 0 ? nodeLabel(spec, p.node) : tr("Model");
                if (p.port >= 0) layer += tr(", input %1").arg(p.port);
                if (p.output_port >= 0 && p.node >= 0) {
                    const auto names = graph::output_port_names(spec.node(p.node));
                    layer += tr(", output %1")
                                 .arg(size_t(p.output_port) < names.size()
                                          ? QString::fromStdString(names[size_t(p.output_port)])
                                          : QString::number(p.output_port));
                }
                auto* item = new QTreeWidgetItem(list_, {layer, QString::fromStdString(p.message)});
                item->setIcon(0, severityIcon(p.severity));
                item->setData(0, kNodeRole, qlonglong(p.node));
                item->setToolTip(1, QString::fromStdString(graph::describe(spec, p)));
            }
        }
    }
    stack_->setCurrentWidget(
        errors_ + warnings_ > 0 || !document_->isOpen() ? static_cast<QWidget*>(list_) : allClear_);
    emit countsChanged(errors_, warnings_);
}

} // namespace myelin::ui
