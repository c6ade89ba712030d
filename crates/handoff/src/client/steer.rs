//! Steering tasks: `handoff cancel|pause|resume`, `message`, `approve`, `deny`.

use super::terminal::outln;
use handoff_protocol::{
    MessageType,
    tasks::{AnswerScope, ApprovalAnswer, ControlAction, SendTaskControlArgs, SendTaskMessageArgs},
};
use serde_json::Value;

use super::{ClientError, Exit, connection::Connection, render, task_id};
use crate::cli::{ApproveArgs, ControlArgs, DenyArgs, MessageArgs, Scope};

/// `handoff cancel|pause|resume ID`.
pub async fn control(
    conn: &Connection,
    action: ControlAction,
    args: &ControlArgs,
) -> Result<Exit, ClientError> {
    let reply = conn
        .call(&SendTaskControlArgs {
            agent_id: None,
            task_id: task_id(&args.id)?,
            control: action,
            reason: args.reason.clone(),
        })
        .await?;
    if args.json {
        render::print_json(&reply.raw)?;
    } else {
        outln!(
            "{} {}: {}",
            args.id,
            reply.value.status,
            reply.value.message
        );
    }
    Ok(Exit::Ok)
}

/// `handoff message ID TEXT [--type T]`.
pub async fn message(conn: &Connection, args: &MessageArgs) -> Result<Exit, ClientError> {
    let kind: MessageType =
        serde_json::from_value(Value::String(args.kind.clone())).map_err(|_| {
            let names: Vec<&str> = MessageType::ALL
                .iter()
                .filter(|t| **t != MessageType::Approval)
                .map(|t| t.as_str())
                .collect();
            ClientError::Usage(format!(
                "--type {}: expected one of {}",
                args.kind,
                names.join(", ")
            ))
        })?;
    if kind == MessageType::Approval {
        return Err(ClientError::Usage(
            "--type approval: answer a request with `handoff approve` or `handoff deny`".into(),
        ));
    }
    send(conn, &args.id, args.text.clone(), kind, args.json).await
}

/// `handoff approve ID [--request R] [--scope S] [--pattern P…]`.
pub async fn approve(conn: &Connection, args: &ApproveArgs) -> Result<Exit, ClientError> {
    let scope = match args.scope {
        Scope::Once => AnswerScope::Once,
        Scope::Task => AnswerScope::Task,
        Scope::Project => AnswerScope::Project,
    };
    if args.scope == Scope::Once && !args.patterns.is_empty() {
        return Err(ClientError::Usage(
            "--pattern applies to --scope task or project only".into(),
        ));
    }
    let answer = ApprovalAnswer {
        patterns: args.patterns.clone(),
        ..ApprovalAnswer::allow(scope).for_request(args.request.clone())
    };
    send(
        conn,
        &args.id,
        answer.to_message(),
        MessageType::Approval,
        args.json,
    )
    .await
}

/// `handoff deny ID [--request R] [--message M]`.
pub async fn deny(conn: &Connection, args: &DenyArgs) -> Result<Exit, ClientError> {
    let answer = ApprovalAnswer::deny()
        .for_request(args.request.clone())
        .with_message(args.message.clone());
    send(
        conn,
        &args.id,
        answer.to_message(),
        MessageType::Approval,
        args.json,
    )
    .await
}

async fn send(
    conn: &Connection,
    id: &str,
    message: String,
    kind: MessageType,
    json: bool,
) -> Result<Exit, ClientError> {
    let reply = conn
        .call(&SendTaskMessageArgs {
            agent_id: None,
            task_id: task_id(id)?,
            message,
            message_type: Some(kind),
            metadata: None,
        })
        .await?;
    if json {
        render::print_json(&reply.raw)?;
    } else {
        let delivered = if reply.value.delivered {
            "delivered"
        } else {
            "not delivered"
        };
        outln!(
            "{id} {} ({delivered}): {}",
            reply.value.status,
            reply.value.note
        );
    }
    Ok(Exit::Ok)
}
